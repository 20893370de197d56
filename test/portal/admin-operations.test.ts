// Operations views against a real gateway sharing the portal's database and store: the live
// limiter, budget and wallet state of one key as the gateways enforce it, one user's usage, the
// 24-hour dashboard with its incidents, and supplier health with recent failures — each scoped
// like the admin user list and refused to members.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import type { PortalHarness } from '../support/portal-harness.js';
import type { GatewayHarness } from '../support/gateway-harness.js';
import { fundWallet, signUp, startPortalWithGateway, type SignedInUser } from '../support/portal-users.js';
import { waitFor } from '../support/wait-for.js';
import { launchChromium, screenshot, signInPage } from '../support/browser.js';
import { supplierOpenKey } from '../../core/routing/index.js';

let world: Awaited<ReturnType<typeof startPortalWithGateway>>;
let portal: PortalHarness;
let gateway: GatewayHarness;
let orgId: number;
let admin: SignedInUser;
let outsider: SignedInUser;
let member: SignedInUser;
let key: { key: { key_id: number; gateway_key_id: string }; secret: string };

const json = async <T>(client: SignedInUser['client'], path: string, status = 200): Promise<T> => {
  const res = await client.get(path, { accept: 'application/json' });
  expect(res.status, await res.clone().text()).toBe(status);
  return (await res.json()) as T;
};

beforeAll(async () => {
  // sim-bad always fails (priority 1): requests that try it fail over to sim-good.
  world = await startPortalWithGateway([
    { name: 'sim-bad', region: 'EU', simulator: { faults: { status: 503 } } },
    { name: 'sim-good', region: 'EU' },
  ]);
  ({ portal, gateway } = world);
  const [org] = (await portal.database
    .knex('organisations')
    .insert({ name: 'Ops Org', slug: `ops-${Date.now()}` })
    .returning('id')) as { id: number }[];
  orgId = org!.id;
  admin = await signUp(portal, { organisationId: orgId, role: 'org_admin' });
  outsider = await signUp(portal, { role: 'org_admin' });
  member = await signUp(portal, { organisationId: orgId });
  await fundWallet(gateway, `user:${member.id}`, 2);
  const res = await member.client.postJson('/dashboard/keys/new', {
    name: 'limited',
    rate_limit_rpm: '3',
    budget_limit: '1',
    budget_period: 'daily',
  });
  expect(res.status, await res.clone().text()).toBe(201);
  key = (await res.json()) as typeof key;
});
afterAll(async () => {
  await world?.close();
});

describe('operations views', () => {
  it('shows a key’s live rate window, budget and wallet as the gateways enforce them', async () => {
    const sdk = new OpenAI({ baseURL: `${gateway.gateway.url}/v1`, apiKey: key.secret, maxRetries: 0 });
    const chat = () =>
      sdk.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'ops' }], max_tokens: 5 }).then(
        () => 'ok',
        (e: unknown) => (e instanceof OpenAI.APIError ? String(e.code) : 'error'),
      );
    for (let i = 0; i < 3; i++) expect(await chat()).toBe('ok');
    expect(await chat()).toBe('rate_limit_exceeded');
    const state = await json<{
      rate_limit: { rpm: number; counted_in_window: number; remaining: number; retry_after_ms: number };
      budget: { limit_usd: number; period: string; used_usd: number; remaining_usd: number };
      wallet: { payer_id: string; mirror_balance_usd: number | null };
      organisation: { organisation_id: number; counted_this_month_usd: number | null };
    }>(admin.client, `/dashboard/admin/api/key-rate-limit-state?key_id=${key.key.key_id}`);
    expect(state.rate_limit).toMatchObject({ rpm: 3, counted_in_window: 3, remaining: 0 });
    expect(state.rate_limit.retry_after_ms).toBeGreaterThan(0);
    expect(state.rate_limit.retry_after_ms).toBeLessThanOrEqual(60_000);
    expect(state.budget).toMatchObject({ limit_usd: 1, period: 'daily' });
    expect(state.budget.used_usd).toBeGreaterThan(0);
    expect(state.wallet.payer_id).toBe(`user:${member.id}`);
    expect(state.wallet.mirror_balance_usd).toBeLessThan(2);
    expect(state.organisation.organisation_id).toBe(orgId);

    await json(outsider.client, `/dashboard/admin/api/key-rate-limit-state?key_id=${key.key.key_id}`, 404);
    await json(member.client, `/dashboard/admin/api/key-rate-limit-state?key_id=${key.key.key_id}`, 403);
    await json(admin.client, '/dashboard/admin/api/key-rate-limit-state', 422);
    await json(admin.client, '/dashboard/admin/api/key-rate-limit-state?key_id=abc', 422);
  });

  it('one user’s usage, the dashboard and supplier health, in scope', async () => {
    await waitFor('the member’s requests in the rollup', async () => {
      const [row] = await portal.database.knex('usage_hourly').where({ key_id: key.key.gateway_key_id }).sum({ n: 'requests' });
      return Number((row as { n: string | null }).n ?? 0) >= 4;
    });
    const usage = await json<{ user_id: number; totals: { requests: number; errors: number } }>(
      admin.client,
      `/dashboard/admin/api/usage?user_id=${member.id}&granularity=hour`,
    );
    expect(usage).toMatchObject({ user_id: member.id, totals: { requests: 4, errors: 1 } });
    await json(outsider.client, `/dashboard/admin/api/usage?user_id=${member.id}`, 404);

    const dashboard = await json<{
      hourly: { requests: number }[];
      totals: { requests: number };
      top_errors: { code: string; count: number }[];
      incidents: { kind: string; supplier: string }[];
    }>(admin.client, '/dashboard/admin/api/dashboard');
    expect(dashboard.hourly).toHaveLength(24);
    expect(dashboard.totals.requests).toBe(4);
    expect(dashboard.top_errors).toEqual([{ code: 'rate_limit_exceeded', count: 1 }]);
    expect(dashboard.incidents).toEqual([]);
    // The breaker opens sim-bad's circuit for every replica (as SupplierHealth writes it).
    await portal.store.set(supplierOpenKey('sim-bad'), String(Date.now() + 30_000), { ttlMs: 30_000 });
    const withIncident = await json<typeof dashboard>(admin.client, '/dashboard/admin/api/dashboard');
    expect(withIncident.incidents).toEqual([expect.objectContaining({ kind: 'supplier_circuit_open', supplier: 'sim-bad' })]);
    const outsiders = await json<{ totals: { requests: number } }>(outsider.client, '/dashboard/admin/api/dashboard');
    expect(outsiders.totals.requests).toBe(0);
    // Always the last 24 hours: a parameter it does not take is named, not ignored.
    const withDays = await admin.client.get('/dashboard/admin/api/dashboard?days=abc', { accept: 'application/json' });
    expect(withDays.status).toBe(422);
    expect(await withDays.text()).toContain('it does not take: days');

    const platform = await signUp(portal, { role: 'platform_admin' });
    const health = await json<{ suppliers: { supplier: string; circuit: string; recent_failures: { code: string; count: number }[] }[] }>(
      platform.client,
      '/dashboard/admin/api/proxy-health',
    );
    const bad = health.suppliers.find((s) => s.supplier === 'sim-bad')!;
    expect(bad.circuit).toBe('open');
    expect(bad.recent_failures).toEqual([expect.objectContaining({ count: expect.any(Number) })]);
    expect(bad.recent_failures[0]!.count).toBeGreaterThanOrEqual(1);
    expect(health.suppliers.find((s) => s.supplier === 'sim-good')).toMatchObject({ circuit: 'closed', recent_failures: [] });
    await json(admin.client, '/dashboard/admin/api/proxy-health', 403);
  });

  it('the administration overview draws the same 24 hours in a real browser, with suppliers for platform admins', async () => {
    const platform = await signUp(portal, { role: 'platform_admin', password: 'browser password 46' });
    const browser = await launchChromium();
    try {
      const session = await signInPage(browser, portal.url, platform, '/dashboard/admin');
      try {
        await session.page.waitForSelector('html[data-charts=drawn]');
        const api = await json<{ totals: { requests: number }; incidents: unknown[] }>(platform.client, '/dashboard/admin/api/dashboard');
        expect(await session.page.textContent('[data-testid=admin-requests]')).toBe(api.totals.requests.toLocaleString('en-US'));
        expect(await session.page.locator('[data-testid=admin-incidents]').count()).toBe(api.incidents.length > 0 ? 1 : 0);
        expect(await session.page.textContent('[data-testid=admin-suppliers] tr[data-supplier="sim-bad"] [data-field=circuit]')).toBe(
          'open',
        );
        await screenshot(session.page, 'admin-overview');
        expect(session.problems).toEqual([]);
      } finally {
        await session.close();
      }
    } finally {
      await browser.close();
    }
    // An org admin sees the page without the platform's supplier table; a member is refused.
    const page = await (await admin.client.get('/dashboard/admin')).text();
    expect(page).toContain('data-testid="admin-requests"');
    expect(page).not.toContain('data-testid="admin-suppliers"');
    expect((await member.client.get('/dashboard/admin', { accept: 'application/json' })).status).toBe(403);
  });
});
