// Signed webhook events that must not credit: a completed session whose amount, currency or payer
// differ from the payment the portal started (recorded as a mismatch, logged, nothing credited),
// a session not paid yet, and events missing the object or its id (acknowledged, ignored).
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../support/wait-for.js';
import { disputeOf, ledgerNano, signedInUser, startBillingWorld, startCheckout, type BillingWorld } from './billing-helpers.js';

let world: BillingWorld;
beforeAll(async () => {
  world = await startBillingWorld();
});
afterAll(async () => {
  await world?.close();
});

/** A checkout started through the API and marked paid at the double without a delivery. */
async function paidSession(amount: number) {
  const { client, id, email } = await signedInUser(world.portal);
  const { url, payment_id } = await startCheckout(client, amount);
  const session = world.double.sessions.get(new URL(url).pathname.split('/').pop()!)!;
  session.status = 'complete';
  session.payment_status = 'paid';
  session.payment_intent = `pi_edge_${payment_id}`;
  const { line_items: _l, payment_intent_metadata: _m, ...shown } = session;
  return { id, email, client, paymentId: payment_id, shown };
}

/** The payment's receipt reached `email`, exactly once (its text names the payment). */
async function receivedOneReceipt(email: string, paymentId: number): Promise<void> {
  const receipt = `email to ${email} ("Receipt: $10.00 added to the wallet")`;
  await waitFor('the receipt', () => world.portal.mail.some((m) => m.includes(receipt)), 5_000);
  const sent = world.portal.mail.filter((m) => m.includes(receipt));
  expect(sent).toHaveLength(1);
  expect(readFileSync(/written to (\S+)/.exec(sent[0]!)![1]!, 'utf8')).toContain(`Payment:              ${paymentId}`);
}

const deliver = async (type: string, object: unknown) => {
  const res = await world.double.post(world.webhookUrl, world.double.buildEvent(type, object as never));
  expect(res.status).toBe(200);
  return ((await res.json()) as { outcome: string }).outcome;
};

describe('webhook events that must not credit', () => {
  it('records a completed session that disagrees with its payment as a mismatch and credits nothing', async () => {
    for (const tamper of [
      (s: Record<string, unknown>) => ({ ...s, amount_total: Number(s.amount_total) * 10 }),
      (s: Record<string, unknown>) => ({ ...s, currency: 'eur' }),
      (s: Record<string, unknown>) => ({ ...s, metadata: { ...(s.metadata as object), payer_id: 'user:999999' } }),
    ]) {
      const { id, paymentId, shown } = await paidSession(10);
      expect(await deliver('checkout.session.completed', tamper(shown as unknown as Record<string, unknown>))).toBe('mismatch');
      expect(await ledgerNano(world.portal, `user:${id}`)).toBe(0);
      expect(await world.portal.database.knex('billing_payments').where({ id: paymentId }).first('status')).toEqual({ status: 'pending' });
    }
    expect(world.portal.logText()).toContain('processor event does not match its payment; not credited');
  });

  it('ignores a session not paid yet, and events without an object or an id', async () => {
    const { id, shown } = await paidSession(10);
    expect(await deliver('checkout.session.completed', { ...shown, payment_status: 'unpaid' })).toBe('ignored');
    expect(await deliver('checkout.session.completed', { ...shown, id: undefined })).toBe('ignored');
    expect(await deliver('checkout.session.completed', null)).toBe('ignored');
    expect(await ledgerNano(world.portal, `user:${id}`)).toBe(0);
    // The genuine event still credits afterwards.
    expect(await deliver('checkout.session.completed', shown)).toBe('credited');
    expect(await ledgerNano(world.portal, `user:${id}`)).toBe(10e9);
  });
});

describe('processor customers', () => {
  it('replaces a recorded customer the processor no longer knows (other keys, deleted there)', async () => {
    const { client, id } = await signedInUser(world.portal);
    await startCheckout(client, 5);
    const knex = world.portal.database.knex;
    const first = (await knex('billing_customers')
      .where({ payer_id: `user:${id}` })
      .first()) as { processor_customer_id: string };
    world.double.customers.delete(first.processor_customer_id);
    await startCheckout(client, 5);
    const second = (await knex('billing_customers')
      .where({ payer_id: `user:${id}` })
      .first()) as { processor_customer_id: string };
    expect(second.processor_customer_id).not.toBe(first.processor_customer_id);
    expect(world.double.customers.has(second.processor_customer_id)).toBe(true);
  });
});

describe('disputes', () => {
  it('hold the disputed credit back while open, give it back when won, keep it when lost, once each', async () => {
    const knex = world.portal.database.knex;
    for (const [id, outcome, balance] of [
      ['dp_won', 'won', 10e9],
      ['dp_lost', 'lost', 0],
    ] as const) {
      const { id: userId, paymentId, shown } = await paidSession(10);
      expect(await deliver('checkout.session.completed', shown)).toBe('credited');
      expect(await deliver('charge.dispute.created', disputeOf(shown, id))).toBe('held');
      // A redelivery under another event id holds nothing more.
      expect(await deliver('charge.dispute.created', disputeOf(shown, id))).toBe('ignored');
      expect(await ledgerNano(world.portal, `user:${userId}`)).toBe(0);
      expect(await knex('billing_payments').where({ id: paymentId }).first('status')).toEqual({ status: 'disputed' });

      expect(await deliver('charge.dispute.closed', disputeOf(shown, id, outcome))).toBe(`dispute_${outcome}`);
      expect(await deliver('charge.dispute.closed', disputeOf(shown, id, outcome))).toBe('ignored');
      expect(await ledgerNano(world.portal, `user:${userId}`)).toBe(balance);
      expect(await knex('billing_payments').where({ dispute_id: id }).first('status')).toEqual({ status: outcome });
      // The payments list shows the dispute's net wallet effect: nothing once won, the hold once lost.
      const { credit_nano } = (await knex('billing_payments').where({ dispute_id: id }).first('credit_nano')) as { credit_nano: string };
      expect(Number(credit_nano)).toBe(balance - 10e9);
    }
  });
});

describe('signed events that would count money twice or break the endpoint (outside probe)', () => {
  const knex = () => world.portal.database.knex;
  const disputeOf = (
    shown: { payment_intent?: unknown; amount_total?: unknown },
    id: string,
    status = 'needs_response',
    amount?: number,
  ) => ({
    id,
    object: 'dispute',
    amount: amount ?? shown.amount_total,
    charge: `ch_${id}`,
    payment_intent: shown.payment_intent,
    status,
    metadata: {},
  });
  const refundOf = (shown: { payment_intent?: unknown }, id: string, cents: number) => ({
    id,
    object: 'charge',
    payment_intent: shown.payment_intent,
    amount_refunded: cents,
    metadata: {},
  });

  it('the confirmation page of a disputed payment shows the credit and says it was later disputed (it said only "disputed")', async () => {
    const { client, shown } = await paidSession(10);
    expect(await deliver('checkout.session.completed', shown)).toBe('credited');
    expect(await deliver('charge.dispute.created', disputeOf(shown, 'dp_confirmation'))).toBe('held');
    const html = await (await client.get(`/dashboard/billing/fund?session_id=${String(shown.id)}`)).text();
    expect(html).toContain('data-status="disputed"');
    expect(html).toContain('$10.00 was added to your wallet.');
    expect(html).toContain('This payment was later disputed.');
  });

  it('a dispute won after the payment was refunded in full gives nothing back: the card has its money', async () => {
    const { id: userId, paymentId, shown } = await paidSession(10);
    expect(await deliver('checkout.session.completed', shown)).toBe('credited');
    expect(await deliver('charge.dispute.created', disputeOf(shown, 'dp_refunded'))).toBe('held');
    expect(await deliver('charge.refunded', refundOf(shown, 'ch_dp_refunded', Number(shown.amount_total)))).toBe('reversed');
    expect(await deliver('charge.dispute.closed', disputeOf(shown, 'dp_refunded', 'won'))).toBe('dispute_won');
    expect(await ledgerNano(world.portal, `user:${userId}`)).toBe(0);
    expect(await knex()('billing_payments').where({ id: paymentId }).first('status')).toEqual({ status: 'refunded' });
  });

  it('a refund reported failed before the refund itself is answered 503 and recorded nowhere; delivered again after it, it gives back', async () => {
    const { id: userId, shown } = await paidSession(10);
    expect(await deliver('checkout.session.completed', shown)).toBe('credited');
    const failed = {
      id: 're_early_fail',
      object: 'refund',
      amount: 300,
      charge: 'ch_early_fail',
      payment_intent: shown.payment_intent,
      status: 'failed',
    };
    const event = world.double.buildEvent('charge.refund.updated', failed);
    const early = await world.double.post(world.webhookUrl, JSON.stringify(event));
    expect(early.status).toBe(503);
    expect(((await early.json()) as { error: { code: string } }).error.code).toBe('billing_unavailable');
    expect(await knex()('billing_processor_events').where({ event_id: event.id }).first()).toBeUndefined();
    expect(await ledgerNano(world.portal, `user:${userId}`)).toBe(10e9);

    expect(await deliver('charge.refunded', refundOf(shown, 'ch_early_fail', 300))).toBe('reversed');
    expect(await ledgerNano(world.portal, `user:${userId}`)).toBe(7e9);
    const redelivered = await world.double.post(world.webhookUrl, JSON.stringify(event));
    expect(((await redelivered.json()) as { outcome: string }).outcome).toBe('refund_returned');
    expect(await ledgerNano(world.portal, `user:${userId}`)).toBe(10e9);
  });

  it('a refund still pending or paid changes nothing; one of no positive whole amount is a mismatch', async () => {
    const { id: userId, shown } = await paidSession(10);
    expect(await deliver('checkout.session.completed', shown)).toBe('credited');
    expect(await deliver('charge.refunded', refundOf(shown, 'ch_refund_states', 300))).toBe('reversed');
    const refund = { id: 're_states', object: 'refund', amount: 300, charge: 'ch_refund_states', payment_intent: shown.payment_intent };
    for (const status of ['pending', 'succeeded', 'requires_action', undefined])
      expect(await deliver('refund.updated', { ...refund, status })).toBe('ignored');
    for (const amount of [0, -300, 2.5, '300'])
      expect(await deliver('refund.failed', { ...refund, id: `re_amount_${String(amount)}`, amount, status: 'failed' })).toBe('mismatch');
    expect(await ledgerNano(world.portal, `user:${userId}`)).toBe(7e9);
  });

  it('a dispute won after a partial refund gives back the held credit less what the refund was due', async () => {
    const { id: userId, shown } = await paidSession(10);
    expect(await deliver('checkout.session.completed', shown)).toBe('credited');
    expect(await deliver('charge.dispute.created', disputeOf(shown, 'dp_partial'))).toBe('held');
    expect(await deliver('charge.refunded', refundOf(shown, 'ch_dp_partial', 300))).toBe('reversed');
    expect(await deliver('charge.dispute.closed', disputeOf(shown, 'dp_partial', 'won'))).toBe('dispute_won');
    expect(await ledgerNano(world.portal, `user:${userId}`)).toBe(7e9);
  });

  it('a refund that fails while its payment is disputed: the dispute settles as if it never was, and money is counted once', async () => {
    for (const outcome of ['won', 'lost'] as const) {
      const { id: userId, shown } = await paidSession(10);
      const [dispute, charge] = [`dp_failed_refund_${outcome}`, `ch_dp_failed_refund_${outcome}`];
      expect(await deliver('checkout.session.completed', shown)).toBe('credited');
      expect(await deliver('charge.dispute.created', { ...disputeOf(shown, dispute), charge })).toBe('held');
      expect(await deliver('charge.refunded', refundOf(shown, charge, 300))).toBe('reversed');
      const refund = { id: `re_${dispute}`, object: 'refund', amount: 300, charge, payment_intent: shown.payment_intent, status: 'failed' };
      expect(await deliver('refund.failed', refund)).toBe('refund_returned');
      // The hold keeps the whole credit while the dispute is open, whatever the refund did.
      expect(await ledgerNano(world.portal, `user:${userId}`), outcome).toBe(0);
      expect(await deliver('charge.dispute.closed', { ...disputeOf(shown, dispute, outcome), charge })).toBe(`dispute_${outcome}`);
      // Won: no refund was paid, so the whole $10 comes back; lost: the card has it, the wallet nothing.
      expect(await ledgerNano(world.portal, `user:${userId}`), outcome).toBe(outcome === 'won' ? 10e9 : 0);
    }
  });

  it("another session carrying a payment's metadata credits nothing; the payment is credited once", async () => {
    const { id: userId, paymentId, shown } = await paidSession(5);
    const forged = { ...shown, id: 'cs_forged_1' };
    // Before the real session is paid, and after: neither credits.
    expect(await deliver('checkout.session.completed', forged)).toBe('mismatch');
    expect(await ledgerNano(world.portal, `user:${userId}`)).toBe(0);
    expect(await deliver('checkout.session.completed', shown)).toBe('credited');
    expect(await deliver('checkout.session.completed', { ...shown, id: 'cs_forged_2' })).toBe('mismatch');
    expect(await ledgerNano(world.portal, `user:${userId}`)).toBe(5e9);
    expect(await knex()('billing_payments').where({ id: paymentId }).first('status')).toEqual({ status: 'succeeded' });
  });

  it('amounts past the payment are held to it; a negative dispute holds nothing; no SQL reaches the processor', async () => {
    const { id: userId, paymentId, shown } = await paidSession(10);
    expect(await deliver('checkout.session.completed', shown)).toBe('credited');
    expect(await deliver('charge.dispute.created', disputeOf(shown, 'dp_negative', 'needs_response', -500))).toBe('mismatch');
    expect(await ledgerNano(world.portal, `user:${userId}`)).toBe(10e9);
    expect(await deliver('charge.refunded', refundOf(shown, 'ch_huge', 1e12))).toBe('reversed');
    expect(await ledgerNano(world.portal, `user:${userId}`)).toBe(0);
    const row = (await knex()('billing_payments').where({ id: paymentId }).first('status', 'refunded_cents')) as {
      status: string;
      refunded_cents: number;
    };
    expect(row).toEqual({ status: 'refunded', refunded_cents: Number(shown.amount_total) });
  });

  it('events without a text id or type are acknowledged and change nothing; a numeric id is an id', async () => {
    const raw = (event: Record<string, unknown>) => world.double.post(world.webhookUrl, JSON.stringify(event));
    for (const event of [
      { type: 'checkout.session.completed', data: { object: {} } },
      { id: 'evt_typeless', type: 42, data: { object: {} } },
      { id: '', type: 'checkout.session.completed', data: { object: {} } },
    ]) {
      const res = await raw(event);
      expect(res.status, JSON.stringify(event)).toBe(200);
      expect(((await res.json()) as { outcome: string }).outcome).toBe('ignored');
    }
  });

  it('a signed body of any JSON shape is acknowledged as ignored, null included (outside probe: null answered 500)', async () => {
    for (const body of ['null', '[1,2]', '"str"', '123', 'true', '{}', '[]']) {
      const res = await world.double.post(world.webhookUrl, body);
      expect(res.status, body).toBe(200);
      expect(((await res.json()) as { outcome: string }).outcome, body).toBe('ignored');
    }
    // Metadata of another shape (an operation id that is an object) is no metadata: nothing is looked up with it.
    const odd = { id: 'pi_odd_meta', object: 'payment_intent', metadata: { operation_id: { x: 1 }, payment_id: 5, payer_id: ['u'] } };
    expect(await deliver('payment_intent.payment_failed', odd)).toBe('unknown_payment');
  });

  it('a dispute whose amount is not a whole number of cents is a mismatch and holds nothing (outside probe: "abc" held it all)', async () => {
    const { id: userId, paymentId, shown } = await paidSession(10);
    expect(await deliver('checkout.session.completed', shown)).toBe('credited');
    for (const [n, amount] of [
      ['abc', 'abc'],
      ['fraction', 10.5],
      ['missing', undefined],
      ['null', null],
    ] as const) {
      const dispute = { ...disputeOf(shown, `dp_amount_${n}`), amount };
      expect(await deliver('charge.dispute.created', dispute), n).toBe('mismatch');
      expect(await deliver('charge.dispute.closed', { ...dispute, status: 'lost' }), n).toBe('mismatch');
    }
    expect(await ledgerNano(world.portal, `user:${userId}`)).toBe(10e9);
    expect(await knex()('billing_payments').where({ id: paymentId }).first('status')).toEqual({ status: 'succeeded' });
    expect(await knex()('billing_payments').where({ original_payment_id: paymentId, kind: 'dispute' })).toEqual([]);
  });

  it('a numeric event id is an id', async () => {
    const raw = (event: Record<string, unknown>) => world.double.post(world.webhookUrl, JSON.stringify(event));
    const { id: userId, shown } = await paidSession(10);
    const numeric = await raw({ id: 987654321, object: 'event', type: 'checkout.session.completed', data: { object: shown } });
    expect(((await numeric.json()) as { outcome: string }).outcome).toBe('credited');
    const again = await raw({ id: 987654321, object: 'event', type: 'checkout.session.completed', data: { object: shown } });
    expect(((await again.json()) as { outcome: string }).outcome).toBe('duplicate');
    expect(await ledgerNano(world.portal, `user:${userId}`)).toBe(10e9);
  });
});

describe('events out of order (outside probe)', () => {
  const knex = () => world.portal.database.knex;
  // The charge and dispute objects carry the payment's metadata, as the processor copies it from
  // the payment intent: before the completion, that is how they find their payment.
  const withMeta = (shown: { payment_intent?: unknown; metadata?: unknown }) => ({
    payment_intent: shown.payment_intent,
    metadata: shown.metadata,
  });
  const refundOf = (shown: { payment_intent?: unknown; metadata?: unknown }, id: string, cents: number) => ({
    id,
    object: 'charge',
    amount_refunded: cents,
    ...withMeta(shown),
  });
  const disputeOf = (
    shown: { payment_intent?: unknown; amount_total?: unknown; metadata?: unknown },
    id: string,
    status = 'needs_response',
  ) => ({
    id,
    object: 'dispute',
    amount: shown.amount_total,
    charge: `ch_${id}`,
    status,
    ...withMeta(shown),
  });

  it('a refund before the completion takes back only what the payment credits, and the completion then credits nothing more', async () => {
    for (const [cents, balance] of [
      [undefined, 0],
      [300, 7e9],
    ] as const) {
      const { id: userId, email, paymentId, shown } = await paidSession(10);
      expect(await deliver('charge.refunded', refundOf(shown, `ch_early_${paymentId}`, cents ?? Number(shown.amount_total)))).toBe(
        'reversed',
      );
      // The refund credited the payment first: its receipt goes out then, once (outside probe: none did).
      await receivedOneReceipt(email, paymentId);
      expect(await ledgerNano(world.portal, `user:${userId}`)).toBe(balance);
      expect(await deliver('checkout.session.completed', shown)).toBe('duplicate');
      expect(await ledgerNano(world.portal, `user:${userId}`)).toBe(balance);
      expect(await knex()('billing_payments').where({ id: paymentId }).first('status')).toEqual({
        status: cents === undefined ? 'refunded' : 'partially_refunded',
      });
      await receivedOneReceipt(email, paymentId);
    }
  });

  it('a charge event whose PaymentIntent cannot be looked up (processor down) is answered 503 and recorded nowhere; redelivered, it applies', async () => {
    const { id: userId, paymentId, shown } = await paidSession(10);
    // No metadata of ours and a PaymentIntent the portal has not seen: only the lookup finds the payment.
    const refund = { id: 'ch_lookup_down', object: 'charge', amount_refunded: 300, payment_intent: shown.payment_intent, metadata: {} };
    world.double.paymentIntents.set(String(shown.payment_intent), {
      ...(world.double.paymentIntents.get(String(shown.payment_intent)) ?? {}),
      id: String(shown.payment_intent),
      metadata: world.double.sessions.get(String(shown.id))!.payment_intent_metadata,
    } as never);
    const event = world.double.buildEvent('charge.refunded', refund);
    world.double.apiUnavailable = true;
    try {
      const res = await world.double.post(world.webhookUrl, JSON.stringify(event));
      expect(res.status).toBe(503);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('billing_unavailable');
    } finally {
      world.double.apiUnavailable = false;
    }
    expect(await knex()('billing_processor_events').where({ event_id: event.id }).first()).toBeUndefined();
    expect(await knex()('billing_payments').where({ id: paymentId }).first('status')).toEqual({ status: 'pending' });
    const again = await world.double.post(world.webhookUrl, JSON.stringify(event));
    expect(((await again.json()) as { outcome: string }).outcome).toBe('reversed');
    expect(await ledgerNano(world.portal, `user:${userId}`)).toBe(7e9);
  });

  it('a dispute before the completion holds the credit, and winning it gives the credit back once', async () => {
    const { id: userId, email, paymentId, shown } = await paidSession(10);
    expect(await deliver('charge.dispute.created', disputeOf(shown, 'dp_early'))).toBe('held');
    await receivedOneReceipt(email, paymentId);
    expect(await ledgerNano(world.portal, `user:${userId}`)).toBe(0);
    expect(await deliver('checkout.session.completed', shown)).toBe('duplicate');
    expect(await deliver('charge.dispute.closed', disputeOf(shown, 'dp_early', 'won'))).toBe('dispute_won');
    expect(await ledgerNano(world.portal, `user:${userId}`)).toBe(10e9);
    await receivedOneReceipt(email, paymentId);
  });

  it("a dispute's close before its creation applies the outcome once; the creation then holds nothing", async () => {
    for (const [outcome, balance] of [
      ['lost', 0],
      ['won', 10e9],
    ] as const) {
      const { id: userId, paymentId, shown } = await paidSession(10);
      expect(await deliver('checkout.session.completed', shown)).toBe('credited');
      const id = `dp_close_first_${outcome}`;
      expect(await deliver('charge.dispute.closed', disputeOf(shown, id, outcome))).toBe(`dispute_${outcome}`);
      expect(await deliver('charge.dispute.created', disputeOf(shown, id))).toBe('ignored');
      expect(await deliver('charge.dispute.closed', disputeOf(shown, id, outcome))).toBe('ignored');
      expect(await ledgerNano(world.portal, `user:${userId}`)).toBe(balance);
      expect(await knex()('billing_payments').where({ dispute_id: id }).first('status')).toEqual({ status: outcome });
      expect(await knex()('billing_payments').where({ id: paymentId }).first('status')).toEqual({
        status: outcome === 'lost' ? 'disputed' : 'succeeded',
      });
    }
  });
});
