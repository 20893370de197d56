// The autorouter pages against a real gateway sharing the portal's database and store: each
// preference layer (user, key, administrator override, organisation) changes what `auto` picks
// at the gateway from the next request; who may change what; the report counts exactly the
// auto-routed requests with the audit log's cost and a comparison priced from the catalogue;
// malformed input is a 422 naming the field; help panels hide and come back.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import type { PortalClient } from '../support/portal-client.js';
import type { PortalHarness } from '../support/portal-harness.js';
import type { GatewayHarness } from '../support/gateway-harness.js';
import { fundWallet, signUp, startPortalWithGateway, type SignedInUser } from '../support/portal-users.js';
import { waitFor } from '../support/wait-for.js';

let world: Awaited<ReturnType<typeof startPortalWithGateway>>;
let portal: PortalHarness;
let gateway: GatewayHarness;

const prices = {
  mini: { input_usd_per_mtok: 0.15, output_usd_per_mtok: 0.6 },
  std: { input_usd_per_mtok: 1, output_usd_per_mtok: 4 },
  large: { input_usd_per_mtok: 2.5, output_usd_per_mtok: 10 },
};

async function createKey(client: PortalClient, name: string) {
  const res = await client.postJson('/dashboard/keys/new', { name });
  expect(res.status, await res.clone().text()).toBe(201);
  return (await res.json()) as { key: { key_id: number; gateway_key_id: string }; secret: string };
}

/** The model `auto` chooses for this key now (the answer names it). */
const autoChoice = async (secret: string): Promise<string> => {
  const completion = await new OpenAI({ baseURL: `${gateway.gateway.url}/v1`, apiKey: secret, maxRetries: 0 }).chat.completions.create({
    model: 'auto',
    messages: [{ role: 'user', content: 'route me' }],
    max_tokens: 5,
  });
  return completion.model;
};

/** Waits until `auto` picks `model` for the key (the change reaches the gateway by pub/sub). */
const expectChoice = (secret: string, model: string) =>
  waitFor(`auto to choose ${model}`, async () => (await autoChoice(secret)) === model, 10_000, 50);

const post = async (client: PortalClient, path: string, body: Record<string, unknown>, status = 200) => {
  const res = await client.postJson(path, body);
  expect(res.status, await res.clone().text()).toBe(status);
  return (await res.json()) as Record<string, unknown>;
};

let orgId: number;
let otherOrgId: number;
let alice: SignedInUser;
let bob: SignedInUser;
let admin: SignedInUser;
let outsider: SignedInUser;
let aliceKey: Awaited<ReturnType<typeof createKey>>;
let aliceSecondKey: Awaited<ReturnType<typeof createKey>>;

beforeAll(async () => {
  world = await startPortalWithGateway([{ name: 'sim-eu', region: 'EU', models: Object.entries(prices).map(([id, p]) => ({ id, ...p })) }]);
  ({ portal, gateway } = world);
  const knex = portal.database.knex;
  const orgs = (await knex('organisations')
    .insert([
      { name: 'Router Org', slug: `router-${Date.now()}` },
      { name: 'Other Org', slug: `other-${Date.now()}` },
    ])
    .returning('id')) as { id: number }[];
  orgId = orgs[0]!.id;
  otherOrgId = orgs[1]!.id;
  alice = await signUp(portal, { organisationId: orgId });
  bob = await signUp(portal, { organisationId: orgId });
  admin = await signUp(portal, { organisationId: orgId, role: 'org_admin' });
  outsider = await signUp(portal, { organisationId: otherOrgId, role: 'org_admin' });
  await fundWallet(gateway, `user:${alice.id}`, 20);
  aliceKey = await createKey(alice.client, 'router key');
  aliceSecondKey = await createKey(alice.client, 'second key');
});
afterAll(async () => {
  await world?.close();
});

describe('preferences reach the gateway', () => {
  it('each layer changes what auto picks, in the documented precedence', async () => {
    expect(await autoChoice(aliceKey.secret)).toBe('mini'); // no policy: the cheapest

    const user = await post(alice.client, '/dashboard/autorouter/user', { mode: 'premium' });
    expect(user).toMatchObject({ ok: true, layer: 'user', policy: { mode: 'premium' }, keys_updated: 2 });
    await expectChoice(aliceKey.secret, 'large');
    await expectChoice(aliceSecondKey.secret, 'large');

    await post(alice.client, '/dashboard/autorouter/api-key', { key_id: aliceKey.key.key_id, prefer: 'std, large' });
    await expectChoice(aliceKey.secret, 'std');
    expect(await autoChoice(aliceSecondKey.secret)).toBe('large'); // the other key keeps the user's preference

    // The organisation excludes std: the key's first preference is dropped, its second is used.
    await post(admin.client, '/dashboard/admin/autorouter/org', { exclude: ['std'] });
    await expectChoice(aliceKey.secret, 'large');

    // An administrator's override wins over the owner's key preference.
    const override = await post(admin.client, '/dashboard/admin/autorouter/api-key', {
      key_id: aliceKey.key.key_id,
      mode: 'cheapest',
      prefer: [],
    });
    expect(override).toMatchObject({ layer: 'key_override', keys_updated: 1 });
    // The override sets no preferred list, so the key's own list (large) still applies first.
    await expectChoice(aliceKey.secret, 'large');
    await post(admin.client, '/dashboard/admin/autorouter/api-key', { key_id: aliceKey.key.key_id, prefer: ['mini'] });
    await expectChoice(aliceKey.secret, 'mini');

    // Clearing the override gives the owner's preference back.
    expect(await post(admin.client, '/dashboard/admin/autorouter/api-key', { key_id: aliceKey.key.key_id, action: 'clear' })).toMatchObject(
      {
        policy: null,
      },
    );
    await expectChoice(aliceKey.secret, 'large');
    // The Anthropic interface resolves `auto` by the same policy.
    const message = await new Anthropic({ baseURL: gateway.gateway.url, apiKey: aliceKey.secret, maxRetries: 0 }).messages.create({
      model: 'auto',
      max_tokens: 5,
      messages: [{ role: 'user', content: 'route me too' }],
    });
    expect(message.model).toBe('large');

    const view = await (await alice.client.get('/dashboard/api/autorouter', { accept: 'application/json' })).json();
    const key = (view as { keys: { key_id: number; effective: unknown; override: unknown }[] }).keys.find(
      (k) => k.key_id === aliceKey.key.key_id,
    );
    expect(key).toMatchObject({ override: null, effective: { mode: 'premium', prefer: ['large'], exclude: ['std'] } });
    expect((view as { preferences: { organisation: unknown } }).preferences.organisation).toMatchObject({ exclude: ['std'] });

    // The owner's activity shows every change, the administrator's marked as theirs.
    const activity = (await knex()('portal_activity').where({ user_id: alice.id, kind: 'autorouter_changed' })) as {
      actor_user_id: number | null;
    }[];
    expect(activity.length).toBeGreaterThanOrEqual(4);
    expect(activity.some((a) => a.actor_user_id === admin.id)).toBe(true);
  });

  it('only the people the permission table names may change a layer', async () => {
    // Another member cannot touch Alice's key; a member cannot override or set the organisation's policy.
    await post(bob.client, '/dashboard/autorouter/api-key', { key_id: aliceKey.key.key_id, mode: 'premium' }, 404);
    await post(alice.client, '/dashboard/admin/autorouter/api-key', { key_id: aliceKey.key.key_id, mode: 'premium' }, 403);
    await post(alice.client, '/dashboard/admin/autorouter/org', { mode: 'premium' }, 403);
    // An administrator of another organisation reaches neither the key nor the organisation.
    await post(outsider.client, '/dashboard/admin/autorouter/api-key', { key_id: aliceKey.key.key_id, mode: 'premium' }, 404);
    await post(outsider.client, '/dashboard/admin/autorouter/org', { org_id: orgId, mode: 'premium' }, 403);
    // Signed out: 401.
    const anonymous = await fetch(`${portal.url}/dashboard/autorouter/user`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: portal.url },
      body: '{"mode":"premium"}',
    });
    expect(anonymous.status).toBe(401);
  });

  it('malformed updates and queries are a 422 naming the field', async () => {
    const invalid = async (path: string, body: Record<string, unknown>, field: string) => {
      const res = await alice.client.postJson(path, body);
      const text = await res.text();
      expect(res.status, text).toBe(422);
      expect(text).toContain(field);
    };
    await invalid('/dashboard/autorouter/user', { mode: 'fastest' }, 'mode');
    await invalid('/dashboard/autorouter/user', { prefer: ['no-such-model'] }, 'prefer');
    await invalid('/dashboard/autorouter/user', { exclude: 'auto' }, 'exclude');
    await invalid('/dashboard/autorouter/user', { prefer: Array.from({ length: 21 }, (_, i) => `m${i}`) }, 'prefer');
    await invalid('/dashboard/autorouter/user', { prefer: [{ id: 'mini' }] }, 'prefer');
    await invalid('/dashboard/autorouter/user', { prefer: ['mini'], exclude: ['mini'] }, 'Both preferred and excluded: mini');
    await invalid('/dashboard/autorouter/api-key', { mode: 'premium' }, 'key_id');
    await invalid('/dashboard/autorouter/api-key', { key_id: 'x', mode: 'premium' }, 'key_id');
    // A misspelt field is refused, not read as an empty policy that clears the one in place.
    await alice.client.postJson('/dashboard/autorouter/user', { mode: 'cheapest' });
    await invalid('/dashboard/autorouter/user', { modee: 'premium' }, 'modee');
    const kept = (await (await alice.client.get('/dashboard/api/autorouter', { accept: 'application/json' })).json()) as unknown;
    expect(JSON.stringify(kept)).toContain('cheapest');
    await alice.client.postJson('/dashboard/autorouter/user', { action: 'clear' });
    for (const query of ['days=0', 'days=367', 'days=abc', 'compare=nope', 'days=1&days=2', 'other=1']) {
      const res = await alice.client.get(`/dashboard/api/autorouter?${query}`, { accept: 'application/json' });
      expect(res.status, query).toBe(422);
    }
  });
});

describe('the autorouter report', () => {
  it('counts the auto-routed requests only, with the audit log’s cost and a comparison at list price', async () => {
    const knex = portal.database.knex;
    // A named-model request is not the autorouter's: it must not be counted.
    await new OpenAI({ baseURL: `${gateway.gateway.url}/v1`, apiKey: aliceSecondKey.secret, maxRetries: 0 }).chat.completions.create({
      model: 'std',
      messages: [{ role: 'user', content: 'named' }],
      max_tokens: 5,
    });
    const keyIds = [aliceKey.key.gateway_key_id, aliceSecondKey.key.gateway_key_id];
    const settled = async () => {
      const [row] = await knex('audit_log').whereIn('key_id', keyIds).count({ n: '*' });
      return Number((row as { n: string }).n);
    };
    let before = -1;
    await waitFor(
      'the audit log to settle',
      async () => {
        const now = await settled();
        const same = now === before;
        before = now;
        return same && now > 0;
      },
      30_000,
      300,
    );
    const auto = (await knex('audit_log').whereIn('key_id', keyIds).andWhere('auto_routed', true)) as {
      model: string;
      input_tokens: number;
      cached_input_tokens: number;
      output_tokens: number;
      cost_usd: string;
    }[];
    const named = await knex('audit_log').whereIn('key_id', keyIds).andWhere('auto_routed', false).count({ n: '*' });
    expect(Number((named[0] as { n: string }).n)).toBeGreaterThanOrEqual(1);

    const res = await alice.client.get('/dashboard/api/autorouter?days=7&compare=large', { accept: 'application/json' });
    expect(res.status).toBe(200);
    const { report } = (await res.json()) as {
      report: {
        days: number;
        compare: { model: string };
        totals: { requests: number; cost_usd: number; comparison_cost_usd: number; saving_usd: number };
        models: { model: string; requests: number; share: number; cost_usd: number }[];
        daily: { date: string; requests: number }[];
      };
    };
    expect(report.days).toBe(7);
    expect(report.daily).toHaveLength(7);
    expect(report.compare.model).toBe('large');
    expect(report.totals.requests).toBe(auto.length);
    expect(report.daily.reduce((n, d) => n + d.requests, 0)).toBe(auto.length);
    const nano = (usd: number | string) => Math.round(Number(usd) * 1e9);
    expect(nano(report.totals.cost_usd)).toBe(auto.reduce((n, r) => n + nano(r.cost_usd), 0));
    const comparison = auto.reduce(
      (n, r) =>
        n +
        Math.round((r.input_tokens - r.cached_input_tokens) * prices.large.input_usd_per_mtok * 1000) +
        Math.round(r.output_tokens * prices.large.output_usd_per_mtok * 1000),
      0,
    );
    expect(nano(report.totals.comparison_cost_usd)).toBe(comparison);
    expect(nano(report.totals.saving_usd)).toBe(comparison - nano(report.totals.cost_usd));
    for (const model of new Set(auto.map((r) => r.model)))
      expect(report.models.find((m) => m.model === model)?.requests).toBe(auto.filter((r) => r.model === model).length);
    expect(report.models.reduce((n, m) => n + m.share, 0)).toBeCloseTo(1, 3);

    // Bob's keys made no auto request: his report is empty, not Alice's.
    const bobs = (await (await bob.client.get('/dashboard/api/autorouter', { accept: 'application/json' })).json()) as {
      report: { totals: { requests: number } };
    };
    expect(bobs.report.totals.requests).toBe(0);
    // The organisation admin (admin mode is on by default) sees the organisation's.
    const admins = (await (await admin.client.get('/dashboard/api/autorouter?days=7', { accept: 'application/json' })).json()) as {
      report: { totals: { requests: number } };
    };
    expect(admins.report.totals.requests).toBe(auto.length);

    // The Management API's audit list says which requests `auto` routed.
    const audit = async (keyId: string) => {
      const res = await fetch(`${gateway.gateway.url}/v1/manage/keys/${keyId}/audit?limit=100`, {
        headers: { authorization: `Bearer ${gateway.adminKey}` },
      });
      expect(res.status).toBe(200);
      return ((await res.json()) as { data: { model: string; auto_routed: boolean }[] }).data;
    };
    expect((await audit(aliceKey.key.gateway_key_id)).every((r) => r.auto_routed)).toBe(true);
    const second = await audit(aliceSecondKey.key.gateway_key_id);
    expect(second.find((r) => r.model === 'std')?.auto_routed).toBe(false);
    expect(second.some((r) => r.auto_routed)).toBe(true);
  });

  it('renders the page with the table, the forms each role may use, and the chart data', async () => {
    const page = await (await alice.client.get('/dashboard/autorouter?days=7')).text();
    expect(page).toContain('data-testid="autorouter-table"');
    expect(page).toContain('data-testid="form-user"');
    expect(page).toContain('data-testid="form-key"');
    expect(page).not.toContain('data-testid="autorouter-admin-org"');
    expect(page).toContain('id="autorouter-data"');
    const adminPage = await (await admin.client.get('/dashboard/autorouter')).text();
    expect(adminPage).toContain('data-testid="autorouter-admin-org"');
    expect(adminPage).toContain('data-testid="autorouter-admin-key"');
    // A form post answers with a redirect and a fixed notice.
    const form = await alice.client.postForm('/dashboard/autorouter/user', { mode: 'premium', prefer: '', exclude: '', action: 'save' });
    expect(form.status).toBe(303);
    expect(form.headers.get('location')).toBe('/dashboard/autorouter?notice=user');
    expect(await (await alice.client.get('/dashboard/autorouter?notice=user')).text()).toContain('Your preference is saved');
  });
});

describe('help panels', () => {
  it('hide and show per user on the autorouter, projects and quality pages', async () => {
    const page = async (path: string) => (await bob.client.get(path)).text();
    expect(await page('/dashboard/autorouter')).toContain('data-testid="help-autorouter"');
    expect(await post(bob.client, '/dashboard/autorouter/help', { action: 'hide' })).toEqual({ panel: 'autorouter', hidden: true });
    const hidden = await page('/dashboard/autorouter');
    expect(hidden).not.toContain('data-testid="help-autorouter"');
    expect(hidden).toContain('data-testid="help-show"');
    // Another user's panel is untouched.
    expect(await (await alice.client.get('/dashboard/autorouter')).text()).toContain('data-testid="help-autorouter"');
    expect(await post(bob.client, '/dashboard/autorouter/help', { action: 'show' })).toEqual({ panel: 'autorouter', hidden: false });
    expect(await page('/dashboard/autorouter')).toContain('data-testid="help-autorouter"');

    expect(await page('/dashboard/projects')).toContain('data-testid="help-projects"');
    expect(await page('/dashboard/guide')).toContain('data-testid="help-projects"');
    const form = await bob.client.postForm('/dashboard/projects/help', { action: 'hide' });
    expect(form.status).toBe(303);
    expect(form.headers.get('location')).toBe('/dashboard/projects');
    expect(await page('/dashboard/projects')).not.toContain('data-testid="help-projects"');
    expect(await page('/dashboard/guide')).not.toContain('data-testid="help-projects"');

    await post(bob.client, '/dashboard/qualitative/help', { action: 'hide' });
    expect(await page('/dashboard/qualitative')).not.toContain('data-testid="help-qualitative"');
    // Signed out, the quality explorer explains itself, without a Hide button.
    const anonymous = await (await fetch(`${portal.url}/dashboard/qualitative`)).text();
    expect(anonymous).toContain('data-testid="help-qualitative"');
    expect(anonymous).not.toContain('data-testid="help-hide"');

    const bad = await bob.client.postJson('/dashboard/autorouter/help', { action: 'toggle' });
    expect(bad.status).toBe(422);
    expect(await bad.text()).toContain('action');
  });
});

const knex = () => portal.database.knex;
