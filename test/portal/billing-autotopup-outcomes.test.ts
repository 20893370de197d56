// Automatic top-up charges whose answer is not a plain success or decline (outside probe): a
// payment intent still `processing`, a 500 after the processor charged (replayed by every retry
// under the same key), a default card changed between retries, and a request refused as invalid.
// The charge is credited once, by the answer or by `payment_intent.succeeded`, and an unknown
// outcome is never reported to the payer as a decline.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { autoTopupPolicyVersion } from '../../core/billing/index.js';
import { defaultEnabledEvents } from '../support/stripe-double.js';
import type { PortalClient } from '../support/portal-client.js';
import { waitFor } from '../support/wait-for.js';
import { ledgerNano, signedInUser, startBillingWorld, type BillingWorld } from './billing-helpers.js';

let world: BillingWorld;
beforeAll(async () => {
  // payment_intent.succeeded is generated but not delivered: each test delivers it when it chooses.
  world = await startBillingWorld({
    settings: { SVC_AUTO_TOPUP_CHECK_MS: '100' },
    doubleOptions: { enabledEvents: defaultEnabledEvents.filter((t) => t !== 'payment_intent.succeeded') },
  });
});
afterAll(async () => {
  await world?.close();
});

const knex = () => world.portal.database.knex;
interface Op {
  id: string;
  status: string;
  attempts: number;
  failure_code: string | null;
  payment_intent_id: string | null;
  payment_method_id: string | null;
}
const operationsOf = async (payer: string) =>
  (await knex()('billing_auto_topup_operations').where({ payer_id: payer }).orderBy('created_at')) as Op[];
const intentRequestsOf = (payer: string) =>
  world.double.requestsTo('POST', '/v1/payment_intents').filter((r) => (r.params.metadata as Record<string, string>)?.payer_id === payer);

async function saveCard(client: PortalClient, card = '4242 4242 4242 4242'): Promise<void> {
  const res = await client.postJson('/api/billing/payment-methods/setup', {});
  expect(res.status, await res.clone().text()).toBe(200);
  const outcome = await world.double.payOnHostedPage(((await res.json()) as { url: string }).url, card);
  if (!('redirect' in outcome)) throw new Error(`refused: ${outcome.refused}`);
}
const methods = async (client: PortalClient) =>
  (await (await client.get('/api/billing/payment-methods')).json()) as { default_payment_method: string; data: { id: string }[] };

async function enable(client: PortalClient) {
  const res = await client.postJson('/api/billing/auto-topup', {
    version: 0,
    enabled: true,
    threshold_usd: 5,
    amount_usd: 10,
    monthly_cap_usd: 100,
    consent: true,
    policy_version: autoTopupPolicyVersion,
  });
  expect(res.status, await res.clone().text()).toBe(200);
}

/** The `payment_intent.succeeded` the double generated for `intentId`, delivered now; its outcome. */
async function deliverSucceeded(intentId: string): Promise<string> {
  const event = world.double.events.find((e) => e.type === 'payment_intent.succeeded' && (e.data.object as { id: string }).id === intentId);
  expect(event, `payment_intent.succeeded for ${intentId}`).toBeDefined();
  // A new event id each time, as a second event about the same intent would have.
  const res = await world.double.post(world.webhookUrl, { ...event!, id: `${event!.id}_${Math.random()}` });
  expect(res.status).toBe(200);
  return ((await res.json()) as { outcome: string }).outcome;
}

/** Runs the watcher's retry of a pending operation now (as if it had gone stale), with `attempts` already made. */
async function retryNow(opId: string, attempts?: number): Promise<void> {
  await knex()('billing_auto_topup_operations')
    .where({ id: opId })
    .update({ updated_at: new Date(Date.now() - 3_600_000), ...(attempts !== undefined && { attempts }) });
  await world.portal.portal.deps.billing.autoTopup.runOnce();
}

/** No decline mail went to `email`, once the mail handed over so far was sent (the portal mails after its answers). */
const noDeclineMail = async (email: string) => {
  await world.portal.mailSettled();
  return !world.portal.mail.some((m) => m.includes(`email to ${email} ("Your automatic top-up was declined")`));
};

describe('automatic top-up outcomes the processor does not give at once', () => {
  it('a payment intent answered `processing` stays pending (no pause, no failure mail) and is credited once by payment_intent.succeeded', async () => {
    const { client, id, email } = await signedInUser(world.portal);
    const payer = `user:${id}`;
    await saveCard(client);
    world.double.nextIntentOutcomes.push('processing');
    await enable(client);
    await waitFor('the charge', () => intentRequestsOf(payer).length > 0, 10_000);
    await waitFor('the answer recorded', async () => (await operationsOf(payer))[0]?.payment_intent_id != null, 10_000);
    const [op] = await operationsOf(payer);
    expect(op).toMatchObject({ status: 'pending' });
    expect(((await (await client.get('/api/billing/auto-topup')).json()) as { paused_reason: unknown }).paused_reason).toBeNull();
    world.double.settleProcessing(op!.payment_intent_id!);
    expect(await deliverSucceeded(op!.payment_intent_id!)).toBe('credited');
    expect(await deliverSucceeded(op!.payment_intent_id!)).toBe('duplicate');
    expect(await ledgerNano(world.portal, payer)).toBe(10e9);
    expect((await operationsOf(payer))[0]).toMatchObject({ status: 'succeeded' });
    expect(await noDeclineMail(email)).toBe(true);
  });

  it('a 500 after the charge, replayed by every retry, leaves the operation unknown (not a decline), settled once by payment_intent.succeeded', async () => {
    const { client, id, email } = await signedInUser(world.portal);
    const payer = `user:${id}`;
    await saveCard(client);
    world.double.nextIntentOutcomes.push('server_error_after_charge');
    await enable(client);
    await waitFor('the first attempt', async () => (await operationsOf(payer))[0]?.attempts === 1, 10_000);
    await waitFor('its 500', () => intentRequestsOf(payer).some((r) => r.status === 500), 10_000);
    // The last attempt the watcher makes, replaying the same 500.
    await retryNow((await operationsOf(payer))[0]!.id, 7);
    const [op] = await operationsOf(payer);
    expect(op).toMatchObject({ status: 'unknown', failure_code: 'outcome_unknown' });
    const settings = (await (await client.get('/api/billing/auto-topup')).json()) as { paused_reason: unknown };
    expect(settings.paused_reason).toBeNull();
    expect(await noDeclineMail(email)).toBe(true);
    // No second operation while the first may have charged.
    await world.portal.portal.deps.billing.autoTopup.runOnce();
    expect(await operationsOf(payer)).toHaveLength(1);
    const intent = [...world.double.paymentIntents.values()].find((i) => i.metadata.operation_id === op!.id)!;
    expect(intent.status).toBe('succeeded');
    expect(await deliverSucceeded(intent.id)).toBe('credited');
    expect(await deliverSucceeded(intent.id)).toBe('duplicate');
    expect(await ledgerNano(world.portal, payer)).toBe(10e9);
    expect((await operationsOf(payer))[0]).toMatchObject({ status: 'succeeded', payment_intent_id: intent.id });
    const payments = (await (await client.get('/api/billing/payments')).json()) as { data: { kind: string; status: string }[] };
    expect(payments.data).toEqual([expect.objectContaining({ kind: 'auto_topup', status: 'succeeded', wallet_usd: 10 })]);
  });

  it('every retry sends the same request under its key, with the card chosen when the operation was made, after the default changed', async () => {
    const { client, id } = await signedInUser(world.portal);
    const payer = `user:${id}`;
    await saveCard(client);
    const first = (await methods(client)).default_payment_method;
    world.double.nextIntentOutcomes.push('server_error_after_charge');
    await enable(client);
    await waitFor('its 500', () => intentRequestsOf(payer).some((r) => r.status === 500), 10_000);
    const [op] = await operationsOf(payer);
    // The payer saves another card and makes it the default before the retry.
    await saveCard(client, '5555 5555 5555 4444');
    const second = (await methods(client)).data.find((m) => m.id !== first)!.id;
    expect((await client.postJson(`/api/billing/payment-methods/${second}/default`, {})).status).toBe(200);
    await retryNow(op!.id);
    const sent = intentRequestsOf(payer);
    expect(sent.length).toBeGreaterThan(1);
    expect(sent.map((r) => r.status)).not.toContain(400);
    for (const r of sent) {
      expect(r.idempotencyKey).toBe(op!.id);
      expect(r.params).toEqual(sent[0]!.params);
      expect(r.params.payment_method).toBe(first);
    }
    // The off-session charge allows no redirect-based method (no return_url is needed).
    expect(sent[0]!.params.automatic_payment_methods).toEqual({ enabled: 'true', allow_redirects: 'never' });
    expect((await operationsOf(payer))[0]).toMatchObject({ status: 'pending', payment_method_id: first });
  });

  it('a request refused as invalid is recorded once with its reason and not retried', async () => {
    const { client, id, email } = await signedInUser(world.portal);
    const payer = `user:${id}`;
    await saveCard(client);
    world.double.nextIntentOutcomes.push('invalid_request');
    await enable(client);
    await waitFor('the operation to end', async () => (await operationsOf(payer))[0]?.status === 'failed', 10_000);
    const [op] = await operationsOf(payer);
    expect(op!.failure_code).toMatch(/^invalid_request/);
    await retryNow(op!.id);
    expect(intentRequestsOf(payer)).toHaveLength(1);
    expect(await noDeclineMail(email)).toBe(true);
  });
});

describe('hosted Checkout sessions', () => {
  it('offer cards only, in payment and setup mode, as the portal lists only cards', async () => {
    const { client } = await signedInUser(world.portal);
    await saveCard(client);
    expect((await client.postJson('/api/billing/checkout', { amount: 5 })).status).toBe(200);
    const sessions = world.double.requestsTo('POST', '/v1/checkout/sessions').slice(-2);
    expect(sessions.map((r) => [r.params.mode, r.params.allowed_payment_method_types])).toEqual([
      ['setup', ['card']],
      ['payment', ['card']],
    ]);
  });
});
