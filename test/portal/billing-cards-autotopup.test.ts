// Saved cards (hosted setup, list, default, delete — another payer's card is never touched), the
// payment history's paging, and automatic top-up: versioned settings with consent, exactly one
// operation when 50 concurrent requests through two gateway replicas drain the wallet below the
// threshold (and when portal replicas race to create it), a declined card recorded once and never
// retried, and operations readable by their payer only.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { autoTopupPolicyVersion } from '../../core/billing/index.js';
import type { PortalClient } from '../support/portal-client.js';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';
import { harnessSecrets } from '../support/portal-harness.js';
import { waitFor } from '../support/wait-for.js';
import { keyPayingFrom, ledgerNano, signedInUser, startBillingWorld, startCheckout, type BillingWorld } from './billing-helpers.js';

let world: BillingWorld;
beforeAll(async () => {
  // A fast watcher, so tests wait milliseconds rather than seconds for a top-up.
  world = await startBillingWorld({ settings: { SVC_AUTO_TOPUP_CHECK_MS: '100' } });
});
afterAll(async () => {
  await world?.close();
});

const knex = () => world.portal.database.knex;
const nano = (usd: number) => Math.round(usd * 1e9);

/** Saves `card` through the hosted setup page; the redirect back to the billing page. */
async function saveCard(client: PortalClient, card = '4242 4242 4242 4242'): Promise<string> {
  const res = await client.postJson('/api/billing/payment-methods/setup', {});
  expect(res.status, await res.clone().text()).toBe(200);
  const { url } = (await res.json()) as { url: string };
  const outcome = await world.double.payOnHostedPage(url, card);
  if (!('redirect' in outcome)) throw new Error(`refused: ${outcome.refused}`);
  return outcome.redirect;
}

interface Methods {
  default_payment_method: string | null;
  data: { id: string; last4: string; is_default: boolean }[];
}
const methodsOf = async (client: PortalClient) => (await (await client.get('/api/billing/payment-methods')).json()) as Methods;

/** Funds a wallet by a paid checkout of `usd`. */
async function fund(client: PortalClient, usd: number): Promise<void> {
  const { url } = await startCheckout(client, usd);
  expect('redirect' in (await world.double.payOnHostedPage(url))).toBe(true);
}

/** Turns automatic top-up on for the caller (version must be current). */
async function enableAutoTopup(client: PortalClient, values: { threshold: number; amount: number; cap: number }, version = 0) {
  const res = await client.postJson('/api/billing/auto-topup', {
    version,
    enabled: true,
    threshold_usd: values.threshold,
    amount_usd: values.amount,
    monthly_cap_usd: values.cap,
    consent: true,
    policy_version: autoTopupPolicyVersion,
  });
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as { version: number; enabled: boolean };
}

const operationsOf = async (payerId: string) =>
  (await knex()('billing_auto_topup_operations').where({ payer_id: payerId }).orderBy('created_at')) as { id: string; status: string }[];

describe('saved cards', () => {
  it('are saved on the hosted page (the first becomes the default), listed, switched and removed', async () => {
    const { client } = await signedInUser(world.portal);
    expect(await methodsOf(client)).toMatchObject({ data: [], default_payment_method: null });
    const back = await saveCard(client);
    expect(back).toMatch(new RegExp(`^${world.portal.url}/dashboard/billing\\?setup_session=cs_test_`));
    const setup = world.double.requestsTo('POST', '/v1/checkout/sessions').at(-1)!;
    expect(setup.params).toMatchObject({ mode: 'setup', currency: 'usd' });
    expect(setup.params.line_items).toBeUndefined();

    const first = await methodsOf(client);
    expect(first.data).toHaveLength(1);
    expect(first.data[0]).toMatchObject({ last4: '4242', is_default: true });
    expect(first.default_payment_method).toBe(first.data[0]!.id);
    const sessionId = new URL(back).searchParams.get('setup_session')!;
    expect(await (await client.get(`/api/billing/checkout-status?session_id=${sessionId}`)).json()).toMatchObject({
      mode: 'setup',
      status: 'card_saved',
    });

    await saveCard(client, '5555 5555 5555 4444');
    const both = await methodsOf(client);
    expect(both.data.map((m) => [m.last4, m.is_default])).toEqual([
      ['4242', true],
      ['4444', false],
    ]);
    const second = both.data[1]!.id;
    expect((await client.postJson(`/api/billing/payment-methods/${second}/default`, {})).status).toBe(200);
    expect((await methodsOf(client)).default_payment_method).toBe(second);

    expect((await client.request('DELETE', `/api/billing/payment-methods/${first.data[0]!.id}`)).status).toBe(200);
    expect((await methodsOf(client)).data.map((m) => m.last4)).toEqual(['4444']);
    expect(world.double.violations).toEqual([]);
  });

  it("never touches another payer's card: 404 for it, 422 for a malformed id", async () => {
    const owner = await signedInUser(world.portal);
    await saveCard(owner.client);
    const card = (await methodsOf(owner.client)).data[0]!.id;
    const stranger = await signedInUser(world.portal);
    await saveCard(stranger.client);
    expect((await stranger.client.request('DELETE', `/api/billing/payment-methods/${card}`)).status).toBe(404);
    expect((await stranger.client.postJson(`/api/billing/payment-methods/${card}/default`, {})).status).toBe(404);
    expect((await stranger.client.request('DELETE', '/api/billing/payment-methods/pm_doesnotexist')).status).toBe(404);
    for (const bad of ['123', 'card_1', 'pm_' + 'x'.repeat(300), 'pm_a%20b'])
      expect((await stranger.client.request('DELETE', `/api/billing/payment-methods/${bad}`)).status, bad).toBe(422);
    expect((await methodsOf(owner.client)).data.map((m) => m.id)).toEqual([card]);
  });
});

describe('payment history', () => {
  it('is paged newest first, and refuses bad paging parameters', async () => {
    const { client } = await signedInUser(world.portal);
    for (const usd of [5, 6, 7]) await fund(client, usd);
    const first = (await (await client.get('/api/billing/payments?limit=2')).json()) as {
      data: { payment_id: number; wallet_usd: number; status: string }[];
      has_more: boolean;
      next_before: number;
    };
    expect(first.data.map((p) => p.wallet_usd)).toEqual([7, 6]);
    expect(first.data.every((p) => p.status === 'succeeded')).toBe(true);
    expect(first.has_more).toBe(true);
    const second = (await (await client.get(`/api/billing/payments?limit=2&before=${first.next_before}`)).json()) as typeof first;
    expect(second.data.map((p) => p.wallet_usd)).toEqual([5]);
    expect(second.has_more).toBe(false);
    for (const bad of ['limit=0', 'limit=101', 'limit=x', 'before=-1', 'before=a', 'limit=1&limit=2', 'page=2'])
      expect((await client.get(`/api/billing/payments?${bad}`)).status, bad).toBe(422);
    // Another user sees none of them.
    const other = await signedInUser(world.portal);
    expect(((await (await other.client.get('/api/billing/payments')).json()) as typeof first).data).toEqual([]);
  });
});

describe('automatic top-up settings', () => {
  it('saved off by someone who never turned them on hold no consent', async () => {
    const { client } = await signedInUser(world.portal);
    const off = await client.postJson('/api/billing/auto-topup', { version: 0, enabled: false, consent: false });
    expect(off.status, await off.clone().text()).toBe(200);
    expect(await off.json()).toMatchObject({ version: 1, enabled: false, consented_at: null });
  });

  it('saved off, keep the values sent (checked by the same rules as on), so the form shows them for turning it back on', async () => {
    const { client } = await signedInUser(world.portal);
    const off = await client.postJson('/api/billing/auto-topup', {
      version: 0,
      enabled: false,
      threshold_usd: 5,
      amount_usd: 10,
      monthly_cap_usd: 100,
      consent: true,
      policy_version: autoTopupPolicyVersion,
    });
    expect(off.status, await off.clone().text()).toBe(200);
    expect(await off.json()).toMatchObject({
      version: 1,
      enabled: false,
      threshold_usd: 5,
      amount_usd: 10,
      monthly_cap_usd: 100,
      consented_at: null,
    });
    // Garbage is refused off as on: 422 naming the field, nothing saved.
    for (const [field, value] of [
      ['threshold_usd', -1],
      ['amount_usd', 'NaN'],
      ['monthly_cap_usd', '1e400'],
      ['amount_usd', 1],
      ['monthly_cap_usd', 5],
      ['threshold_usd', '5.001'],
    ] as const) {
      const bad = await client.postJson('/api/billing/auto-topup', {
        version: 1,
        enabled: false,
        threshold_usd: 5,
        amount_usd: 10,
        monthly_cap_usd: 100,
        [field]: value,
      });
      expect(bad.status, `${field}=${value}`).toBe(422);
      const { error } = (await bad.json()) as { error: { code: string; param: string; human_message: string } };
      expect(error).toMatchObject({ code: 'validation_error', param: field });
      // The rule itself, not "Some input is not valid: <field>".
      expect(error.human_message).toMatch(
        /^(Threshold|Top-up amount|Monthly cap) must be an amount in USD with at most two decimals, between \$[0-9,.]+( \([a-z -]+\))? and \$[0-9,.]+$/,
      );
    }
    // Off with values left out keeps the stored ones.
    const kept = await client.postJson('/api/billing/auto-topup', { version: 1, enabled: false, amount_usd: '12.50' });
    expect(kept.status, await kept.clone().text()).toBe(200);
    expect(await kept.json()).toMatchObject({ version: 2, threshold_usd: 5, amount_usd: 12.5, monthly_cap_usd: 100 });
    // The page's form, saved off, shows what was typed.
    const form = await client.postForm('/dashboard/billing/auto-topup', {
      version: '2',
      enabled: 'off',
      threshold_usd: '7.25',
      amount_usd: '30',
      monthly_cap_usd: '250',
    });
    expect(form.status).toBe(303);
    const page = await (await client.get('/dashboard/billing')).text();
    expect(page).toContain('name="threshold_usd" inputmode="decimal" value="7.25"');
    expect(page).toContain('name="amount_usd" inputmode="decimal" value="30"');
    expect(page).toContain('name="monthly_cap_usd" inputmode="decimal" value="250"');
    const badForm = await client.postForm('/dashboard/billing/auto-topup', {
      version: '3',
      enabled: 'off',
      threshold_usd: '-1',
      amount_usd: '30',
      monthly_cap_usd: '250',
    });
    expect(badForm.status).toBe(422);
    expect(await (await client.get('/api/billing/auto-topup')).json()).toMatchObject({ version: 3, threshold_usd: 7.25, amount_usd: 30 });
  });

  it('refused on the page, come back as typed with the rule broken (they came back as stored, "Some input is not valid")', async () => {
    const { client } = await signedInUser(world.portal);
    const stored = await client.postJson('/api/billing/auto-topup', {
      version: 0,
      enabled: false,
      threshold_usd: 5,
      amount_usd: 10,
      monthly_cap_usd: 100,
    });
    expect(stored.status, await stored.clone().text()).toBe(200);
    const typed = { version: '1', policy_version: autoTopupPolicyVersion, amount_usd: '30', monthly_cap_usd: '250' };

    const badThreshold = await client.postForm('/dashboard/billing/auto-topup', { ...typed, enabled: 'off', threshold_usd: 'abc' });
    expect(badThreshold.status).toBe(422);
    const page = await badThreshold.text();
    expect(page).toContain('threshold usd: must be an amount in USD with at most two decimals, between $0.00 and $10,000.00');
    expect(page).not.toContain('Some input is not valid');
    expect(page).toContain('name="threshold_usd" inputmode="decimal" value="abc"');
    expect(page).toContain('name="amount_usd" inputmode="decimal" value="30"');
    expect(page).toContain('name="monthly_cap_usd" inputmode="decimal" value="250"');
    expect(page).toContain('name="enabled" value="off" checked');

    const noConsent = await client.postForm('/dashboard/billing/auto-topup', { ...typed, enabled: 'on', threshold_usd: '7.25' });
    expect(noConsent.status).toBe(422);
    const again = await noConsent.text();
    expect(again).toContain('consent: tick the box authorising automatic charges to turn automatic top-up on');
    expect(again).not.toContain('Some input is not valid');
    expect(again).toContain('name="threshold_usd" inputmode="decimal" value="7.25"');
    expect(again).toContain('name="enabled" value="on" checked');
    // Nothing was saved by either.
    expect(await (await client.get('/api/billing/auto-topup')).json()).toMatchObject({
      version: 1,
      enabled: false,
      threshold_usd: 5,
      amount_usd: 10,
    });

    // The API says the same rules in its human_message.
    const api = async (body: Record<string, unknown>) =>
      (
        (await (await client.postJson('/api/billing/auto-topup', { version: 1, ...body })).json()) as {
          error: { param: string; human_message: string };
        }
      ).error;
    expect(await api({ enabled: false, threshold_usd: 'abc' })).toMatchObject({
      param: 'threshold_usd',
      human_message: 'Threshold must be an amount in USD with at most two decimals, between $0.00 and $10,000.00',
    });
    expect(await api({ enabled: false, amount_usd: 20, monthly_cap_usd: 10 })).toMatchObject({
      param: 'monthly_cap_usd',
      human_message: 'Monthly cap must be an amount in USD with at most two decimals, between $20.00 (the top-up amount) and $100,000.00',
    });
    expect(
      await api({ enabled: true, threshold_usd: 5, amount_usd: 10, monthly_cap_usd: 100, policy_version: autoTopupPolicyVersion }),
    ).toMatchObject({
      param: 'consent',
      human_message: 'Tick the box authorising automatic charges to turn automatic top-up on (consent: true, to the policy version shown)',
    });
  });

  it('are versioned, need consent to the current policy and a default card, and refuse a stale version', async () => {
    const { client } = await signedInUser(world.portal);
    const values = {
      version: 0,
      enabled: true,
      threshold_usd: 5,
      amount_usd: 20,
      monthly_cap_usd: 100,
      consent: true,
      policy_version: autoTopupPolicyVersion,
    };
    const noCard = await client.postJson('/api/billing/auto-topup', values);
    expect(noCard.status).toBe(409);
    await saveCard(client);
    expect((await client.postJson('/api/billing/auto-topup', { ...values, consent: false })).status).toBe(422);
    expect((await client.postJson('/api/billing/auto-topup', { ...values, consent: undefined })).status).toBe(422);
    expect((await client.postJson('/api/billing/auto-topup', { ...values, policy_version: '2020-01' })).status).toBe(409);
    expect((await client.postJson('/api/billing/auto-topup', { ...values, amount_usd: 1 })).status).toBe(422);
    expect((await client.postJson('/api/billing/auto-topup', { ...values, monthly_cap_usd: 10 })).status).toBe(422);
    expect((await client.postJson('/api/billing/auto-topup', { ...values, version: 'one' })).status).toBe(422);

    const saved = await enableAutoTopup(client, { threshold: 5, amount: 20, cap: 100 });
    expect(saved).toMatchObject({ version: 1, enabled: true, threshold_usd: 5, amount_usd: 20, monthly_cap_usd: 100, paused_reason: null });
    // The same form submitted twice: the second is stale.
    const stale = await client.postJson('/api/billing/auto-topup', values);
    expect(stale.status).toBe(409);
    expect(((await stale.json()) as { error: { details: { current_version: number } } }).error.details.current_version).toBe(1);
    const off = await client.postJson('/api/billing/auto-topup', { version: 1, enabled: false });
    expect(off.status).toBe(200);
    expect(await off.json()).toMatchObject({ version: 2, enabled: false });
  });
});

describe('automatic top-up', () => {
  let gateways: GatewayHarness[] = [];
  beforeAll(async () => {
    // Two gateway replicas on the portal's database and store, with a model whose output costs a
    // cent per token: each request drains up to 5 cents.
    const options = {
      database: world.portal.database,
      store: world.portal.store,
      settings: { SVC_KEY_PEPPER: harnessSecrets.SVC_KEY_PEPPER },
    };
    const suppliers = [{ name: 'sim-eu', region: 'EU', models: [{ id: 'metered', input_usd_per_mtok: 0, output_usd_per_mtok: 10_000 }] }];
    gateways = [await startGatewayHarness(suppliers, options), await startGatewayHarness(suppliers, options)];
  });
  afterAll(async () => {
    for (const g of gateways) await g.close();
  });

  it('creates exactly one operation when 50 concurrent requests through two replicas drain the wallet below the threshold', async () => {
    const { client, id, email } = await signedInUser(world.portal);
    const payer = `user:${id}`;
    await saveCard(client);
    await fund(client, 6);
    await enableAutoTopup(client, { threshold: 5.9, amount: 10, cap: 50 });
    const secret = await keyPayingFrom(world.portal, payer);
    const results = await Promise.allSettled(
      Array.from({ length: 50 }, (_, i) =>
        new OpenAI({ baseURL: `${gateways[i % 2]!.gateway.url}/v1`, apiKey: secret, maxRetries: 0 }).chat.completions.create({
          model: 'metered',
          messages: [{ role: 'user', content: `request ${i}` }],
          max_tokens: 5,
        }),
      ),
    );
    expect(results.filter((r) => r.status === 'fulfilled').length).toBeGreaterThan(0);
    await waitFor('the automatic top-up to succeed', async () => (await operationsOf(payer)).some((o) => o.status === 'succeeded'), 10_000);
    // More passes of the watcher, from this portal and a second replica at once, add nothing.
    const replica = await world.portal.replica();
    await Promise.all([
      ...Array.from({ length: 5 }, () => world.portal.portal.deps.billing.autoTopup.runOnce()),
      ...Array.from({ length: 5 }, () => replica.deps.billing.autoTopup.runOnce()),
    ]);
    const ops = await operationsOf(payer);
    expect(ops).toHaveLength(1);
    const intents = world.double
      .requestsTo('POST', '/v1/payment_intents')
      .filter((r) => (r.params.metadata as Record<string, string>).payer_id === payer);
    expect(intents).toHaveLength(1);
    expect(intents[0]!.idempotencyKey).toBe(ops[0]!.id);
    expect(intents[0]!.params).toMatchObject({ currency: 'usd', off_session: 'true', confirm: 'true', amount: '1061' });
    // The credit is in the ledger once, beside the first funding.
    const credits = await knex()('wallet_entries').where({ payer_id: payer, kind: 'credit' }).orderBy('id');
    expect(credits.map((c: { amount_nano: string }) => Number(c.amount_nano))).toEqual([nano(6), nano(10)]);

    const seen = await client.get(`/api/billing/auto-topup/operations/${ops[0]!.id}`);
    expect(seen.status).toBe(200);
    expect(await seen.json()).toMatchObject({
      operation_id: ops[0]!.id,
      status: 'succeeded',
      wallet_usd: 10,
      credit_usd: 10,
      amount_usd: 10.61,
    });
    expect(world.double.violations).toEqual([]);
    // Its receipt, once: the card charge with its fee, and what reached the wallet.
    const receipt = `email to ${email} ("Receipt: $10.00 added to the wallet")`;
    await waitFor('the receipt', () => world.portal.mail.some((m) => m.includes(receipt)), 5_000);
    expect(world.portal.mail.filter((m) => m.includes(receipt))).toHaveLength(1);
  });

  it('creates one operation when portal replicas race for the same low balance', async () => {
    const { client, id } = await signedInUser(world.portal);
    const payer = `user:${id}`;
    await saveCard(client);
    // The wallet is empty, below the threshold from the start: both portals' watchers and ten
    // passes started at once all see the same low balance.
    await enableAutoTopup(client, { threshold: 5, amount: 10, cap: 100 });
    const replica = await world.portal.replica();
    await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? replica : world.portal.portal).deps.billing.autoTopup.runOnce()));
    await waitFor('the top-up to finish', async () => (await operationsOf(payer)).every((o) => o.status !== 'pending'), 10_000);
    expect(await operationsOf(payer)).toHaveLength(1);
    expect(await ledgerNano(world.portal, payer)).toBe(nano(10));
  });

  it('records a declined card once, pauses, emails the payer, and never tries again on its own', async () => {
    const { client, id, email } = await signedInUser(world.portal);
    const payer = `user:${id}`;
    // This card saves fine but every later charge is declined.
    await saveCard(client, '4000 0000 0000 0341');
    const saved = await enableAutoTopup(client, { threshold: 5, amount: 10, cap: 100 });
    await waitFor('the declined operation', async () => (await operationsOf(payer)).some((o) => o.status === 'failed'), 10_000);
    for (let i = 0; i < 5; i++) await world.portal.portal.deps.billing.autoTopup.runOnce();
    const ops = await operationsOf(payer);
    expect(ops).toHaveLength(1);
    expect(await ledgerNano(world.portal, payer)).toBe(0);
    const settings = (await (await client.get('/api/billing/auto-topup')).json()) as { paused_reason: string; version: number };
    expect(settings).toMatchObject({ paused_reason: 'payment_failed', version: saved.version });
    await waitFor(
      'the decline email',
      () => world.portal.mail.some((m) => m.includes(`email to ${email} ("Your automatic top-up was declined")`)),
      5_000,
    );
    const payments = (await (await client.get('/api/billing/payments')).json()) as {
      data: { kind: string; status: string; failure_code: string }[];
    };
    expect(payments.data).toEqual([
      expect.objectContaining({ kind: 'auto_topup', status: 'failed', failure_code: 'generic_decline', wallet_usd: 0, credit_usd: 10 }),
    ]);
    // The operation, too, moved nothing: wallet_usd is its wallet effect, credit_usd what it would have credited.
    const declined = await client.get(`/api/billing/auto-topup/operations/${ops[0]!.id}`);
    expect(await declined.json()).toMatchObject({ status: 'failed', wallet_usd: 0, credit_usd: 10, total_usd: 10.61 });
    // The event the processor sent about the same decline changes nothing more.
    await world.double.settled();
    expect(await operationsOf(payer)).toHaveLength(1);
    expect(
      world.double
        .requestsTo('POST', '/v1/payment_intents')
        .filter((r) => (r.params.metadata as Record<string, string>).payer_id === payer),
    ).toHaveLength(1);
  });

  it('shows an operation to its payer only, and never creates one by being asked', async () => {
    const { client, id } = await signedInUser(world.portal);
    await saveCard(client);
    await enableAutoTopup(client, { threshold: 5, amount: 10, cap: 100 });
    await waitFor('an operation', async () => (await operationsOf(`user:${id}`)).some((o) => o.status === 'succeeded'), 10_000);
    const [op] = await operationsOf(`user:${id}`);
    const stranger = await signedInUser(world.portal);
    expect((await stranger.client.get(`/api/billing/auto-topup/operations/${op!.id}`)).status).toBe(404);
    expect((await stranger.client.get('/api/billing/auto-topup/operations/ato_unknown')).status).toBe(404);
    expect((await stranger.client.get(`/api/billing/auto-topup/operations/${'x'.repeat(201)}`)).status).toBe(422);
    expect(await operationsOf(`user:${stranger.id}`)).toEqual([]);
  });
});
