// Signed webhook events that must not credit: a completed session whose amount, currency or payer
// differ from the payment the portal started (recorded as a mismatch, logged, nothing credited),
// a session not paid yet, and events missing the object or its id (acknowledged, ignored).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerNano, signedInUser, startBillingWorld, startCheckout, type BillingWorld } from './billing-helpers.js';

let world: BillingWorld;
beforeAll(async () => {
  world = await startBillingWorld();
});
afterAll(async () => {
  await world?.close();
});

/** A checkout started through the API and marked paid at the double without a delivery. */
async function paidSession(amount: number) {
  const { client, id } = await signedInUser(world.portal);
  const { url, payment_id } = await startCheckout(client, amount);
  const session = world.double.sessions.get(new URL(url).pathname.split('/').pop()!)!;
  session.status = 'complete';
  session.payment_status = 'paid';
  session.payment_intent = `pi_edge_${payment_id}`;
  const { line_items: _l, payment_intent_metadata: _m, ...shown } = session;
  return { id, paymentId: payment_id, shown };
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
    const disputeOf = (shown: { payment_intent?: unknown; amount_total?: unknown }, id: string, status = 'needs_response') => ({
      id,
      object: 'dispute',
      amount: shown.amount_total,
      charge: `ch_${id}`,
      payment_intent: shown.payment_intent,
      status,
      metadata: {},
    });
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
    }
  });
});
