// Webhook events an outside probe found mishandled: delayed (async) Checkout payments, dispute
// inquiries and prevented disputes, a dispute or refund that arrives before the completion and
// carries none of our metadata (as real ones do), refunds that later fail, and an expired
// session after a failed attempt.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { disputeOf, ledgerNano, signedInUser, startBillingWorld, startCheckout, type BillingWorld } from './billing-helpers.js';

let world: BillingWorld;
beforeAll(async () => {
  world = await startBillingWorld();
});
afterAll(async () => {
  await world?.close();
});

const knex = () => world.portal.database.knex;

/** A checkout started through the API whose session the double reports as completed with `payment_status`. */
async function completedSession(amount: number, paymentStatus: 'paid' | 'unpaid' = 'paid') {
  const { client, id, email } = await signedInUser(world.portal);
  const { url, payment_id } = await startCheckout(client, amount);
  const session = world.double.sessions.get(new URL(url).pathname.split('/').pop()!)!;
  session.status = 'complete';
  session.payment_status = paymentStatus;
  session.payment_intent = `pi_probe_${payment_id}`;
  const { line_items: _l, payment_intent_metadata: meta, ...shown } = session;
  return { id, email, client, paymentId: payment_id, shown, intentMetadata: meta };
}

async function deliverFull(type: string, object: unknown) {
  const res = await world.double.post(world.webhookUrl, world.double.buildEvent(type, object as never));
  return { status: res.status, outcome: ((await res.json()) as { outcome?: string }).outcome };
}
const deliver = async (type: string, object: unknown) => {
  const { status, outcome } = await deliverFull(type, object);
  expect(status, `${type}: ${outcome}`).toBe(200);
  return outcome;
};
const statusOf = async (paymentId: number) =>
  ((await knex()('billing_payments').where({ id: paymentId }).first('status')) as { status: string }).status;

describe('delayed (async) Checkout payments', () => {
  it('are credited once by async_payment_succeeded after an unpaid completion, whatever the order and redeliveries', async () => {
    const { id, paymentId, shown } = await completedSession(10, 'unpaid');
    expect(await deliver('checkout.session.completed', shown)).toBe('ignored');
    expect(await statusOf(paymentId)).toBe('pending');
    const paid = { ...shown, payment_status: 'paid' };
    expect(await deliver('checkout.session.async_payment_succeeded', paid)).toBe('credited');
    expect(await deliver('checkout.session.async_payment_succeeded', paid)).toBe('duplicate');
    expect(await deliver('checkout.session.completed', paid)).toBe('duplicate');
    expect(await ledgerNano(world.portal, `user:${id}`)).toBe(10e9);
    expect(await statusOf(paymentId)).toBe('succeeded');
  });

  it('are marked failed, the payer told, by async_payment_failed; nothing is credited', async () => {
    const { id, email, paymentId, shown } = await completedSession(10, 'unpaid');
    expect(await deliver('checkout.session.completed', shown)).toBe('ignored');
    expect(await deliver('checkout.session.async_payment_failed', shown)).toBe('failure_recorded');
    expect(await statusOf(paymentId)).toBe('failed');
    expect(await ledgerNano(world.portal, `user:${id}`)).toBe(0);
    await world.portal.mailSettled();
    expect(world.portal.mail.some((m) => m.includes(`email to ${email} ("Your payment failed")`))).toBe(true);
  });
});

describe('disputes that take no funds', () => {
  it('an inquiry closed as warning_closed, and a prevented dispute, give back what was held, once', async () => {
    for (const [opened, closed] of [
      ['warning_needs_response', 'warning_closed'],
      ['needs_response', 'prevented'],
    ] as const) {
      const { id, paymentId, shown } = await completedSession(10);
      expect(await deliver('checkout.session.completed', shown)).toBe('credited');
      const disputeId = `dp_${closed}_${paymentId}`;
      expect(await deliver('charge.dispute.created', disputeOf(shown, disputeId, opened))).toBe('held');
      expect(await ledgerNano(world.portal, `user:${id}`)).toBe(0);
      expect(await deliver('charge.dispute.closed', disputeOf(shown, disputeId, closed))).toBe('dispute_won');
      expect(await deliver('charge.dispute.closed', disputeOf(shown, disputeId, closed))).toBe('ignored');
      expect(await ledgerNano(world.portal, `user:${id}`)).toBe(10e9);
      expect(await statusOf(paymentId)).toBe('succeeded');
    }
  });

  it('an inquiry closed before its creation arrives takes nothing', async () => {
    const { id, paymentId, shown } = await completedSession(10);
    expect(await deliver('checkout.session.completed', shown)).toBe('credited');
    const disputeId = `dp_inquiry_first_${paymentId}`;
    expect(await deliver('charge.dispute.closed', disputeOf(shown, disputeId, 'warning_closed'))).toBe('dispute_won');
    expect(await deliver('charge.dispute.created', disputeOf(shown, disputeId, 'warning_needs_response'))).toBe('ignored');
    expect(await ledgerNano(world.portal, `user:${id}`)).toBe(10e9);
  });
});

describe('charge events before the completion, carrying none of our metadata (as real disputes and refunds do)', () => {
  /** The session's PaymentIntent, as the processor holds it: with the metadata Checkout copied onto it. */
  function intentAtProcessor(shown: { payment_intent: string | null; amount_total: number | null }, meta: Record<string, string>) {
    world.double.paymentIntents.set(shown.payment_intent!, {
      id: shown.payment_intent!,
      object: 'payment_intent',
      amount: shown.amount_total!,
      amount_received: shown.amount_total!,
      currency: 'usd',
      customer: null,
      payment_method: null,
      status: 'succeeded',
      metadata: meta,
      latest_charge: null,
      last_payment_error: null,
      created: Math.floor(Date.now() / 1000),
      livemode: false,
    });
  }

  it('a dispute is matched through its PaymentIntent, held, and the completion then credits nothing more', async () => {
    const { id, paymentId, shown, intentMetadata } = await completedSession(10);
    intentAtProcessor(shown, intentMetadata);
    expect(await deliver('charge.dispute.created', disputeOf(shown, `dp_bare_${paymentId}`))).toBe('held');
    expect(await deliver('checkout.session.completed', shown)).toBe('duplicate');
    expect(await ledgerNano(world.portal, `user:${id}`)).toBe(0);
    expect(await deliver('charge.dispute.closed', disputeOf(shown, `dp_bare_${paymentId}`, 'lost'))).toBe('dispute_lost');
    expect(await ledgerNano(world.portal, `user:${id}`)).toBe(0);
    expect(await statusOf(paymentId)).toBe('disputed');
  });

  it('a refund is matched through its PaymentIntent: the completion then credits nothing more', async () => {
    const { id, paymentId, shown, intentMetadata } = await completedSession(10);
    intentAtProcessor(shown, intentMetadata);
    const charge = {
      id: `ch_bare_${paymentId}`,
      object: 'charge',
      payment_intent: shown.payment_intent,
      amount_refunded: 300,
      metadata: {},
    };
    expect(await deliver('charge.refunded', charge)).toBe('reversed');
    expect(await deliver('checkout.session.completed', shown)).toBe('duplicate');
    expect(await ledgerNano(world.portal, `user:${id}`)).toBe(7e9);
  });

  it('a dispute or refund for more than a payment not credited yet is a mismatch: it never marks the payment paid', async () => {
    const { id, paymentId, shown, intentMetadata } = await completedSession(10);
    intentAtProcessor(shown, intentMetadata);
    const over = Number(shown.amount_total) + 206;
    expect(await deliver('charge.dispute.closed', { ...disputeOf(shown, `dp_over_${paymentId}`, 'lost'), amount: over })).toBe('mismatch');
    expect(await deliver('charge.dispute.created', { ...disputeOf(shown, `dp_over_${paymentId}`), amount: over })).toBe('mismatch');
    const charge = {
      id: `ch_over_${paymentId}`,
      object: 'charge',
      payment_intent: shown.payment_intent,
      amount_refunded: over,
      metadata: {},
    };
    expect(await deliver('charge.refunded', charge)).toBe('mismatch');
    const ofOtherAmount = { ...charge, id: `ch_other_${paymentId}`, amount: over, amount_refunded: 100 };
    expect(await deliver('charge.refunded', ofOtherAmount)).toBe('mismatch');
    expect(await statusOf(paymentId)).toBe('pending');
    expect(await ledgerNano(world.portal, `user:${id}`)).toBe(0);
    expect(await deliver('checkout.session.completed', shown)).toBe('credited');
    expect(await ledgerNano(world.portal, `user:${id}`)).toBe(10e9);
  });

  it("another integration's charge (an intent without our metadata, or none at the processor) is acknowledged and left", async () => {
    const { id, paymentId, shown } = await completedSession(10);
    intentAtProcessor(shown, { order: 'elsewhere' });
    expect(await deliver('charge.dispute.created', disputeOf(shown, `dp_foreign_${paymentId}`))).toBe('unknown_payment');
    const missing = { ...shown, payment_intent: `pi_nowhere_${paymentId}` };
    expect(await deliver('charge.dispute.created', disputeOf(missing, `dp_nowhere_${paymentId}`))).toBe('unknown_payment');
    expect(await deliver('checkout.session.completed', shown)).toBe('credited');
    expect(await ledgerNano(world.portal, `user:${id}`)).toBe(10e9);
  });
});

describe('a checkout declined and then left to expire', () => {
  it('ends expired (its page can no longer be paid), and a late completion still credits', async () => {
    const { id, paymentId, shown, intentMetadata } = await completedSession(10, 'unpaid');
    const intent = {
      id: shown.payment_intent,
      object: 'payment_intent',
      // What Checkout copied onto the intent (our payment, payer and installation).
      metadata: intentMetadata,
      last_payment_error: { code: 'card_declined', message: 'Your card was declined.' },
    };
    expect(await deliver('payment_intent.payment_failed', intent)).toBe('failure_recorded');
    expect(await statusOf(paymentId)).toBe('failed');
    expect(await deliver('checkout.session.expired', { ...shown, status: 'expired' })).toBe('expired');
    expect(await statusOf(paymentId)).toBe('expired');
    expect(await deliver('checkout.session.completed', { ...shown, payment_status: 'paid' })).toBe('credited');
    expect(await ledgerNano(world.portal, `user:${id}`)).toBe(10e9);
  });
});
