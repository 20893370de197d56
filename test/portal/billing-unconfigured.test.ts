// A portal without a payment processor (no STRIPE_SECRET_KEY): the billing pages say card payments
// are not set up, every payment endpoint answers 503 billing_unavailable with a human message and
// writes nothing, and the webhook endpoint accepts no event. The fee policy is still stated, here
// with the fee absorbed (SVC_BILLING_FEE_BPS=0, SVC_BILLING_FEE_FIXED_CENTS=0).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookPath } from '../../core/billing/index.js';
import { startPortalHarness, type PortalHarness } from '../support/portal-harness.js';
import { signedInUser } from './billing-helpers.js';

let portal: PortalHarness;
beforeAll(async () => {
  portal = await startPortalHarness({ settings: { SVC_BILLING_FEE_BPS: '0', SVC_BILLING_FEE_FIXED_CENTS: '0' } });
});
afterAll(async () => {
  await portal?.close();
});

describe('billing without a payment processor', () => {
  it('says so on the pages and in processor-config, with the fee policy', async () => {
    const { client } = await signedInUser(portal);
    const config = (await (await client.get('/api/billing/processor-config')).json()) as Record<string, unknown>;
    expect(config).toMatchObject({
      configured: false,
      processor: null,
      test_mode: null,
      publishable_key: null,
      fee_policy: { kind: 'absorbed', percent: 0, fixed_usd: 0 },
    });
    const page = await (await client.get('/dashboard/billing')).text();
    expect(page).toContain('Card payments are not set up on this portal');
    const fund = await (await client.get('/dashboard/billing/fund?amount=10')).text();
    expect(fund).toContain('Card payments are not set up on this portal');
    // The public pricing page says the same, and promises nothing ("Card top-ups are coming").
    const pricing = await (await fetch(`${portal.url}/pricing`)).text();
    expect(pricing).toContain('Card payments are not set up on this portal');
    expect(pricing).not.toContain('coming');
  });

  it('answers every payment endpoint with 503 billing_unavailable and writes nothing', async () => {
    const { client, id } = await signedInUser(portal);
    const calls = [
      () => client.postJson('/api/billing/checkout', { amount: 10 }),
      () => client.postJson('/api/billing/payment-methods/setup', {}),
      () => client.get('/api/billing/payment-methods'),
      () => client.postJson('/api/billing/payment-methods/pm_123/default', {}),
    ];
    for (const call of calls) {
      const res = await call();
      expect(res.status).toBe(503);
      const body = (await res.json()) as { code: string; human_message: string };
      expect(body.code).toBe('billing_unavailable');
      expect(body.human_message).toMatch(/not set up/);
    }
    const form = await client.postForm('/dashboard/billing/fund', { amount: '10' });
    expect(form.status).toBe(503);
    expect(await form.text()).toContain('Card payments are not set up');
    const knex = portal.database.knex;
    expect(
      await knex('billing_payments')
        .where({ payer_id: `user:${id}` })
        .first(),
    ).toBeUndefined();
    expect(
      await knex('wallet_entries')
        .where({ payer_id: `user:${id}` })
        .first(),
    ).toBeUndefined();
  });

  it('accepts no webhook event', async () => {
    const res = await fetch(`${portal.url}${webhookPath}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'stripe-signature': 't=1,v1=00' },
      body: JSON.stringify({ id: 'evt_1', type: 'checkout.session.completed', data: { object: {} } }),
    });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(await portal.database.knex('billing_processor_events').where({ event_id: 'evt_1' }).first()).toBeUndefined();
  });
});
