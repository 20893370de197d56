// Two deployments sharing one processor account (or one whose database was reset): their row ids
// repeat, so idempotency keys built from them alone made the second deployment replay the first
// one's customer and get idempotency errors for its checkouts (outside probe). The keys carry a
// per-database installation id (and a checkout its row's creation time). The same id is in the
// metadata of every session and PaymentIntent the portal makes: the processor sends every event
// of the account to every endpoint, and a refund or dispute of the other deployment's charge
// named a payment id of ours (outside probe: applied to it).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookPath } from '../../core/billing/index.js';
import { startPortalHarness, type PortalHarness } from '../support/portal-harness.js';
import { startStripeDouble, type StripeDouble } from '../support/stripe-double.js';
import { ledgerNano, signedInUser, startCheckout } from './billing-helpers.js';

let double: StripeDouble;
const portals: PortalHarness[] = [];
beforeAll(async () => {
  double = await startStripeDouble();
  for (let i = 0; i < 2; i++) portals.push(await startPortalHarness({ settings: double.portalSettings() }));
  double.setWebhookUrl(`${portals[0]!.url}${webhookPath}`);
});
afterAll(async () => {
  for (const p of portals) await p.close();
  await double?.close();
});

describe('deployments sharing a processor account', () => {
  it('each get their own customer and checkout for the same payer and payment ids', async () => {
    const a = await signedInUser(portals[0]!);
    const b = await signedInUser(portals[1]!);
    const first = await startCheckout(a.client, 10);
    const second = await startCheckout(b.client, 12);
    // The collision the probe found needs the same ids in both databases.
    expect([b.id, second.payment_id]).toEqual([a.id, first.payment_id]);
    const customers = await Promise.all(
      portals.map(
        async (p) =>
          ((await p.database.knex('billing_customers').first('processor_customer_id')) as { processor_customer_id: string })
            .processor_customer_id,
      ),
    );
    expect(customers[0]).not.toBe(customers[1]);
    expect(new URL(first.url).pathname).not.toBe(new URL(second.url).pathname);
    expect(double.requestsTo('POST', '/v1/checkout/sessions').map((r) => r.status)).toEqual([200, 200]);
  });
});

describe("another deployment's refunds and disputes (the processor sends every event to every endpoint)", () => {
  const knexOf = (p: PortalHarness) => p.database.knex;
  const urlOf = (p: PortalHarness) => `${p.url}${webhookPath}`;
  const sessionOf = (url: string) => double.sessions.get(new URL(url).pathname.split('/').pop()!)!;
  /** Posts `event` to a portal's endpoint, signed, as the processor would; the outcome (200 required). */
  async function deliverTo(p: PortalHarness, event: ReturnType<StripeDouble['buildEvent']>) {
    const res = await double.post(urlOf(p), event);
    const body = (await res.json()) as { outcome?: string };
    expect(res.status, `${event.type}: ${body.outcome}`).toBe(200);
    return body.outcome;
  }
  /** The events the double sent (to A's endpoint) since `from`, delivered to `p` too: their outcomes there. */
  async function fanOut(p: PortalHarness, from: number) {
    await double.settled();
    const outcomes: [string, string | undefined][] = [];
    for (const event of double.events.slice(from)) outcomes.push([event.type, await deliverTo(p, event)]);
    return outcomes;
  }
  const rowOf = async (p: PortalHarness, id: number) =>
    (await knexOf(p)('billing_payments').where({ id }).first('status', 'refunded_cents', 'reversed_nano', 'dispute_id')) as Record<
      string,
      unknown
    >;
  const disputeOf = (intentId: string, chargeId: string, id: string, amount: number, status = 'needs_response') => ({
    id,
    object: 'dispute',
    amount,
    charge: chargeId,
    payment_intent: intentId,
    status,
    metadata: {},
  });

  it("change nothing in B, whose payments have the same ids, while A's own events apply to A", async () => {
    const [portalA, portalB] = [portals[0]!, portals[1]!];
    const a = await signedInUser(portalA);
    const b = await signedInUser(portalB);
    expect(b.id).toBe(a.id);
    const paidA = await startCheckout(a.client, 10);
    const pendingB = await startCheckout(b.client, 10);
    expect(pendingB.payment_id).toBe(paidA.payment_id);
    // The next pair too, before A's refund and dispute rows take ids of their own.
    const bigA = await startCheckout(a.client, 12);
    const smallB = await startCheckout(b.client, 10);
    expect(smallB.payment_id).toBe(bigA.payment_id);
    // A's user pays; every event about it reaches B as well.
    let from = double.events.length;
    expect(await double.payOnHostedPage(paidA.url)).toHaveProperty('redirect');
    const intentId = sessionOf(paidA.url).payment_intent!;
    const chargeId = double.paymentIntents.get(intentId)!.latest_charge!;
    double.refund(chargeId, 300);
    expect(Object.fromEntries(await fanOut(portalB, from))).toEqual({
      'checkout.session.completed': 'unknown_payment',
      'payment_intent.succeeded': 'unknown_payment',
      'charge.refunded': 'unknown_payment',
    });
    // A's dispute carries none of our metadata: B finds A's at the processor, and refuses it.
    for (const event of [
      double.buildEvent('charge.dispute.created', disputeOf(intentId, chargeId, 'dp_shared_1', 700)),
      double.buildEvent('charge.dispute.closed', disputeOf(intentId, chargeId, 'dp_shared_1', 700, 'lost')),
    ]) {
      expect(await deliverTo(portalB, event)).toBe('unknown_payment');
      expect(await deliverTo(portalA, event)).toBe(event.type === 'charge.dispute.created' ? 'held' : 'dispute_lost');
    }
    expect(await rowOf(portalB, pendingB.payment_id)).toMatchObject({ status: 'pending', refunded_cents: 0, dispute_id: null });
    expect(Number((await rowOf(portalB, pendingB.payment_id)).reversed_nano)).toBe(0);
    expect(await ledgerNano(portalB, `user:${b.id}`)).toBe(0);
    // A: credited $10, $3 refunded, the $7 left lost to the dispute.
    expect(await ledgerNano(portalA, `user:${a.id}`)).toBe(0);
    expect(await rowOf(portalA, paidA.payment_id)).toMatchObject({ status: 'disputed', refunded_cents: 300 });

    // A dispute of A's $12.67 charge, lost, never marks B's pending $10.61 payment paid: B's user
    // then pays their own session and is credited.
    from = double.events.length;
    expect(await double.payOnHostedPage(bigA.url)).toHaveProperty('redirect');
    await fanOut(portalB, from);
    const bigIntent = sessionOf(bigA.url).payment_intent!;
    const bigCharge = double.paymentIntents.get(bigIntent)!.latest_charge!;
    const lost = double.buildEvent(
      'charge.dispute.closed',
      disputeOf(bigIntent, bigCharge, 'dp_shared_2', Math.round(bigA.total_usd * 100), 'lost'),
    );
    expect(await deliverTo(portalB, lost)).toBe('unknown_payment');
    expect(await rowOf(portalB, smallB.payment_id)).toMatchObject({ status: 'pending', dispute_id: null });
    from = double.events.length;
    expect(await double.payOnHostedPage(smallB.url)).toHaveProperty('redirect');
    await double.settled();
    // The double's own deliveries went to A (its one endpoint): B gets them as a second endpoint would.
    expect(Object.fromEntries(await fanOut(portalB, from))['checkout.session.completed']).toBe('credited');
    expect(await rowOf(portalB, smallB.payment_id)).toMatchObject({ status: 'succeeded' });
    expect(await ledgerNano(portalB, `user:${b.id}`)).toBe(10e9);
    expect(double.violations).toEqual([]);
  });

  it('a payment made before installation ids were recorded keeps matching metadata without one; a newer one does not', async () => {
    const portalB = portals[1]!;
    const b = await signedInUser(portalB);
    const legacy = await startCheckout(b.client, 10);
    const current = await startCheckout(b.client, 10);
    await knexOf(portalB)('billing_payments').where({ id: legacy.payment_id }).update({ install_id: null });
    const refundOf = (paymentId: number, cents: number) => ({
      id: `ch_legacy_${paymentId}`,
      object: 'charge',
      payment_intent: `pi_legacy_${paymentId}`,
      amount_refunded: cents,
      metadata: { payment_id: String(paymentId), payer_id: `user:${b.id}`, user_id: String(b.id) },
    });
    expect(await deliverTo(portalB, double.buildEvent('charge.refunded', refundOf(current.payment_id, 300)))).toBe('unknown_payment');
    expect(await rowOf(portalB, current.payment_id)).toMatchObject({ status: 'pending', refunded_cents: 0 });
    expect(await deliverTo(portalB, double.buildEvent('charge.refunded', refundOf(legacy.payment_id, 300)))).toBe('reversed');
    expect(await rowOf(portalB, legacy.payment_id)).toMatchObject({ status: 'partially_refunded', refunded_cents: 300 });
  });
});
