// Usage and the request log against a real gateway sharing the portal's database and store: the
// numbers equal the audit log (cost to the nano-dollar), every view is scoped like the key list
// (another member sees nothing, an org admin sees the organisation), splits by key and model,
// hourly bins, CSV exports (streamed, formula-safe), cursor paging without gaps or repeats, the
// detail with its attempts, and 422 for every malformed parameter.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import type { PortalClient } from '../support/portal-client.js';
import type { PortalHarness } from '../support/portal-harness.js';
import type { GatewayHarness } from '../support/gateway-harness.js';
import { fundWallet, signUp, startPortalWithGateway } from '../support/portal-users.js';
import { waitFor } from '../support/wait-for.js';
import { formatUsd } from '../../portal/src/web/usd.js';

let world: Awaited<ReturnType<typeof startPortalWithGateway>>;
let portal: PortalHarness;
let gateway: GatewayHarness;

/** A verified, signed-in user with $20 in their wallet (the keys here are paid from it). */
async function signedIn(setup: { organisationId?: number; role?: string } = {}): Promise<{ client: PortalClient; id: number }> {
  const user = await signUp(portal, setup);
  await fundWallet(gateway, `user:${user.id}`, 20);
  return user;
}

async function createKey(client: PortalClient, body: Record<string, unknown>) {
  const res = await client.postJson('/dashboard/keys/new', body);
  expect(res.status, await res.clone().text()).toBe(201);
  return (await res.json()) as { key: { key_id: number; gateway_key_id: string }; secret: string };
}

const call = (secret: string, model: string) =>
  new OpenAI({ baseURL: `${gateway.gateway.url}/v1`, apiKey: secret, maxRetries: 0 }).chat.completions
    .create({ model, messages: [{ role: 'user', content: 'usage please' }], max_tokens: 6 })
    .then(
      () => 200,
      (e: unknown) => (e instanceof OpenAI.APIError ? e.status : 0),
    );

interface Report {
  from: string;
  to: string;
  bins: { start: string; requests: number; errors: number; cost_usd: number; groups?: Record<string, { requests: number }> }[];
  totals: { requests: number; errors: number; input_tokens: number; output_tokens: number; cost_usd: number };
  groups: { id: string; label: string; cost_usd: number }[];
}

let orgId: number;
let alice: { client: PortalClient; id: number };
let bob: { client: PortalClient; id: number };
let admin: { client: PortalClient; id: number };
let keyA: Awaited<ReturnType<typeof createKey>>;
let keyB: Awaited<ReturnType<typeof createKey>>;
const served = { a: 4, b: 3 };

beforeAll(async () => {
  const models = [
    { id: 'gpt-4o-mini', input_usd_per_mtok: 0.15, output_usd_per_mtok: 0.6 },
    { id: 'gpt-4o', input_usd_per_mtok: 2.5, output_usd_per_mtok: 10 },
  ];
  // sim-us is the second route of each model: it never answers while sim-eu is healthy.
  world = await startPortalWithGateway([
    { name: 'sim-eu', region: 'EU', models },
    { name: 'sim-us', region: 'US', models },
  ]);
  ({ portal, gateway } = world);
  const knex = portal.database.knex;
  const [org] = (await knex('organisations')
    .insert({ name: 'Usage Org', slug: `usage-${Date.now()}` })
    .returning('id')) as { id: number }[];
  orgId = org!.id;
  alice = await signedIn({ organisationId: orgId });
  bob = await signedIn({ organisationId: orgId });
  admin = await signedIn({ organisationId: orgId, role: 'org_admin' });
  keyA = await createKey(alice.client, { name: '=HYPERLINK("x")' });
  keyB = await createKey(alice.client, { name: 'batch jobs', allowed_models: 'gpt-4o-mini' });
  for (let i = 0; i < served.a; i++) expect(await call(keyA.secret, 'gpt-4o-mini')).toBe(200);
  for (let i = 0; i < served.b; i++) expect(await call(keyB.secret, 'gpt-4o-mini')).toBe(200);
  // One refusal, audited with its code: a model the key does not allow.
  expect(await call(keyB.secret, 'gpt-4o')).toBe(403);
  const total = served.a + served.b + 1;
  await waitFor('every request in the rollup', async () => {
    const [row] = await knex('usage_hourly').whereIn('key_id', [keyA.key.gateway_key_id, keyB.key.gateway_key_id]).sum({ n: 'requests' });
    return Number((row as { n: string | null }).n ?? 0) === total;
  });
});
afterAll(async () => {
  await world?.close();
});

const json = async <T>(client: PortalClient, path: string): Promise<T> => {
  const res = await client.get(path, { accept: 'application/json' });
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as T;
};

describe('usage', () => {
  it('equals the audit log to the nano-dollar, split by key and by model', async () => {
    const report = await json<Report>(alice.client, '/dashboard/api/usage');
    const audit = (await portal.database
      .knex('audit_log')
      .whereIn('key_id', [keyA.key.gateway_key_id, keyB.key.gateway_key_id])
      .sum({ cost: 'cost_usd', input: 'input_tokens', output: 'output_tokens' })
      .count({ n: '*' })
      .first()) as { cost: string; input: string; output: string; n: string };
    expect(report.totals).toEqual({
      requests: Number(audit.n),
      errors: 1,
      input_tokens: Number(audit.input),
      output_tokens: Number(audit.output),
      cost_usd: Number(audit.cost),
    });
    expect(report.totals.cost_usd).toBeGreaterThan(0);
    expect(report.bins).toHaveLength(30);
    expect(report.bins.at(-1)!.requests).toBe(report.totals.requests);

    const byKey = await json<Report>(alice.client, '/dashboard/api/usage?split_by=key');
    expect(byKey.groups.map((g) => g.label).sort()).toEqual(
      [`=HYPERLINK("x") (#${keyA.key.key_id})`, `batch jobs (#${keyB.key.key_id})`].sort(),
    );
    expect(byKey.bins.at(-1)!.groups![keyA.key.gateway_key_id]!.requests).toBe(served.a);
    const byModel = await json<Report>(alice.client, '/dashboard/api/usage?split_by=model');
    expect(byModel.groups.map((g) => g.id).sort()).toEqual(['gpt-4o', 'gpt-4o-mini']);

    const hourly = await json<Report>(alice.client, '/dashboard/api/usage?granularity=hour');
    expect(hourly.bins).toHaveLength(48);
    expect(hourly.totals.requests).toBe(report.totals.requests);
  });

  it('the hourly form holds the window of its heading: Show unchanged shows the same 48 hours', async () => {
    const hourly = await json<Report>(alice.client, '/dashboard/api/usage?granularity=hour');
    const html = await (await alice.client.get('/dashboard/usage?granularity=hour', { accept: 'text/html' })).text();
    const from = /id="from" name="from" type="([^"]+)" value="([^"]*)"/.exec(html);
    const to = /id="to" name="to" type="([^"]+)" value="([^"]*)"/.exec(html);
    expect([from?.[1], to?.[1]]).toEqual(['datetime-local', 'datetime-local']);
    expect(html).toContain(`from ${hourly.from.slice(0, 16).replace('T', ' ')} until ${hourly.to.slice(0, 16).replace('T', ' ')}`);
    // What the form sends as it was filled in.
    const again = await json<Report>(alice.client, `/dashboard/api/usage?granularity=hour&from=${from![2]}&to=${to![2]}`);
    expect([again.from, again.to]).toEqual([hourly.from, hourly.to]);
    expect(again.bins).toHaveLength(48);
  });

  it('is scoped like the keys: another member sees nothing, the org admin sees the organisation', async () => {
    expect((await json<Report>(bob.client, '/dashboard/api/usage')).totals.requests).toBe(0);
    expect((await json<Report>(admin.client, '/dashboard/api/usage')).totals.requests).toBe(served.a + served.b + 1);
  });

  it('renders the page with the same numbers and exports them as CSV', async () => {
    const page = await (await alice.client.get('/dashboard/usage')).text();
    expect(page).toContain(`data-testid="usage-requests">${served.a + served.b + 1}<`);
    expect(page).toContain('/static/vendor/chart.umd.min.js');
    const chart = await fetch(`${portal.url}/static/vendor/chart.umd.min.js`);
    expect(chart.status).toBe(200);
    expect((await chart.text()).length).toBeGreaterThan(100_000);

    const csv = await (await alice.client.get('/dashboard/usage/export?split_by=key')).text();
    const lines = csv.trim().split('\r\n');
    expect(lines[0]).toBe('start,key,requests,errors,input_tokens,output_tokens,cost_usd');
    // A user-chosen name that starts like a formula is neutralised for spreadsheets.
    expect(csv).toContain(`"'=HYPERLINK(""x"") (#${keyA.key.key_id})"`);
    const requests = lines.slice(1).reduce((sum, l) => sum + Number(l.split(',').at(-5)), 0);
    expect(requests).toBe(served.a + served.b + 1);
  });

  it('answers 422 naming each malformed parameter', async () => {
    for (const query of [
      'granularity=week',
      'split_by=colour',
      'from=yesterday',
      'from=2026-13-01',
      // Days the month does not have: never rolled over into the next month.
      'from=2026-02-30',
      'from=2026-02-31T10:00:00Z',
      'to=2026-04-31',
      'from=2026-11-20&to=2026-11-10',
      'granularity=hour&from=2025-01-01&to=2026-01-01',
      'from=2026-11-01&from=2026-11-02',
      'unknown=1',
    ]) {
      const res = await alice.client.get(`/dashboard/api/usage?${query}`);
      expect(res.status, query).toBe(422);
      expect(((await res.json()) as { code: string }).code).toBe('validation_error');
    }
    // The page itself keeps its navigation and form: the default view, the problem above the form, the dates as typed.
    const page = await alice.client.get('/dashboard/usage?from=2026-11-30&to=2026-11-01&granularity=hour&split_by=model', {
      accept: 'text/html',
    });
    expect(page.status).toBe(422);
    const html = await page.text();
    expect(html).toContain('data-testid="usage-filters"');
    expect(html).toContain('nav class="side-nav"');
    expect(html).toContain('Please correct the form');
    expect(html).toContain('value="2026-11-30"');
    expect(html).toContain('value="2026-11-01"');
    expect(html).toContain('<option value="hour" selected>');
    expect(html).toContain('<option value="model" selected>');
    expect(html).toContain('data-testid="usage-requests"');
  });
});

interface LogPage {
  data: { request_id: number; gateway_request_id: string; key_id: number; status: number; code: string | null; cost_usd: number }[];
  next_cursor: string | null;
}

describe('a key without a budget', () => {
  it('shows what it spent this month, not the $0 of a budget it does not have', async () => {
    const audited = (await portal.database
      .knex('audit_log')
      .where({ key_id: keyA.key.gateway_key_id })
      .sum({ cost: 'cost_usd' })
      .first()) as {
      cost: string;
    };
    expect(Number(audited.cost)).toBeGreaterThan(0);
    const key = await json<{ budget_limit: number | null; spent_this_month_usd: number }>(
      alice.client,
      `/dashboard/keys/${keyA.key.key_id}`,
    );
    expect(key).toMatchObject({ budget_limit: null, spent_this_month_usd: Number(audited.cost) });
    const list = await json<{ data: { key_id: number; spent_this_month_usd: number }[] }>(alice.client, '/dashboard/keys');
    expect(list.data.find((k) => k.key_id === keyA.key.key_id)?.spent_this_month_usd).toBe(Number(audited.cost));
    const page = await (await alice.client.get(`/dashboard/keys/${keyA.key.key_id}`)).text();
    const card = /data-testid="key-spent">([\s\S]*?)<\/div>/.exec(page)?.[1] ?? '';
    expect(card).toContain('this month (UTC) · no budget');
    expect(card).toContain(`<p class="stat">${formatUsd(Number(audited.cost))}</p>`);
  });
});

describe('the request log', () => {
  it('pages newest first without gaps or repeats, and filters', async () => {
    const seen: number[] = [];
    let cursor: string | null = null;
    do {
      const page: LogPage = await json<LogPage>(alice.client, `/dashboard/request-log?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      seen.push(...page.data.map((e) => e.request_id));
      cursor = page.next_cursor;
    } while (cursor);
    expect(seen).toHaveLength(served.a + served.b + 1);
    expect(new Set(seen).size).toBe(seen.length);

    const onlyB = await json<LogPage>(alice.client, `/dashboard/request-log?key_id=${keyB.key.key_id}`);
    expect(onlyB.data).toHaveLength(served.b + 1);
    const refused = await json<LogPage>(alice.client, '/dashboard/request-log?status=4');
    expect(refused.data).toHaveLength(1);
    expect(refused.data[0]).toMatchObject({ status: 403, code: 'model_not_allowed', cost_usd: 0 });
    expect((await json<LogPage>(alice.client, '/dashboard/request-log?code=model_not_allowed')).data).toHaveLength(1);
    expect((await json<LogPage>(alice.client, '/dashboard/request-log?model=gpt-4o-mini')).data).toHaveLength(served.a + served.b);
    expect((await json<LogPage>(bob.client, '/dashboard/request-log')).data).toHaveLength(0);
    for (const query of ['limit=0', 'limit=500', 'status=7', 'cursor=garbage', 'key_id=abc', 'from=soon', 'from=2026-02-30'])
      expect((await alice.client.get(`/dashboard/request-log?${query}`, { accept: 'application/json' })).status, query).toBe(422);
    // From the page: the newest requests unfiltered, the problem above the form, the filter as typed.
    const page = await alice.client.get('/dashboard/request-log?key_id=abc&model=gpt-4o-mini', { accept: 'text/html' });
    expect(page.status).toBe(422);
    const html = await page.text();
    expect(html).toContain('data-testid="log-filters"');
    expect(html).toMatch(/key id: /);
    expect(html).toContain('value="abc"');
    expect(html).toContain('value="gpt-4o-mini"');
  });

  it('the page\'s "Older requests" link keeps the page size', async () => {
    const rowsOf = (html: string) => (html.match(/href="\/dashboard\/request-log\/\d+"/g) ?? []).length;
    const first = await (await alice.client.get('/dashboard/request-log?limit=2', { accept: 'text/html' })).text();
    expect(rowsOf(first)).toBe(2);
    const next = /href="([^"]+)" data-testid="log-next"/.exec(first)?.[1]?.replace(/&amp;/g, '&');
    expect(next).toContain('limit=2');
    const second = await (await alice.client.get(next!, { accept: 'text/html' })).text();
    expect(rowsOf(second)).toBe(2);
  });

  it('shows one request with its attempts to its scope only', async () => {
    const [first] = (await json<LogPage>(alice.client, `/dashboard/request-log?key_id=${keyA.key.key_id}&limit=1`)).data;
    const detail = await json<Record<string, unknown>>(alice.client, `/dashboard/request-log/${first!.request_id}`);
    expect(detail).toMatchObject({ request_id: first!.request_id, key_id: keyA.key.key_id, status: 200, model: 'gpt-4o-mini' });
    expect((detail.attempts as { supplier: string; latency_ms: number }[])[0]).toMatchObject({ outcome: 'ok' });
    expect((detail.attempts as Record<string, unknown>[])[0]).toHaveProperty('latency_ms');
    const html = await (await alice.client.get(`/dashboard/request-log/${first!.request_id}`)).text();
    expect(html).toContain(first!.gateway_request_id);
    // Prompt-cache tokens (an Anthropic supplier's; the simulator reports none): both counts shown.
    await portal.database.knex('audit_log').where({ request_id: first!.gateway_request_id }).update({
      cached_input_tokens: 3,
      cache_write_input_tokens: 5,
    });
    const cached = await json<Record<string, unknown>>(alice.client, `/dashboard/request-log/${first!.request_id}`);
    expect(cached).toMatchObject({ cached_input_tokens: 3, cache_write_input_tokens: 5 });
    const cachedHtml = await (await alice.client.get(`/dashboard/request-log/${first!.request_id}`)).text();
    expect(cachedHtml).toContain('(3 read from the prompt cache, 5 written to it)');
    // Another tenant's request is simply not there; a malformed id is a 422.
    expect((await bob.client.get(`/dashboard/request-log/${first!.request_id}`, { accept: 'application/json' })).status).toBe(404);
    expect((await admin.client.get(`/dashboard/request-log/${first!.request_id}`, { accept: 'application/json' })).status).toBe(200);
    expect((await alice.client.get('/dashboard/request-log/abc', { accept: 'application/json' })).status).toBe(422);
    expect((await alice.client.get('/dashboard/request-log/999999999', { accept: 'application/json' })).status).toBe(404);
  });

  it('exports the filtered rows as CSV', async () => {
    const res = await alice.client.get(`/dashboard/request-log/export?key_id=${keyA.key.key_id}`);
    expect(res.headers.get('content-type')).toContain('text/csv');
    const lines = (await res.text()).trim().split('\r\n');
    expect(lines[0]!.startsWith('request_id,gateway_request_id,ts,key_id,key_name')).toBe(true);
    expect(lines).toHaveLength(served.a + 1);
    expect(lines[1]).toContain(`"'=HYPERLINK(""x"")"`);
    expect((await bob.client.get('/dashboard/request-log/export')).status).toBe(200);
    expect((await (await bob.client.get('/dashboard/request-log/export')).text()).trim().split('\r\n')).toHaveLength(1);
  });
});

interface ModelsList {
  data: { model_id: string; prices: string[]; observed: { requests: number; errors: number; p50_latency_ms: number | null } | null }[];
}

describe('models', () => {
  it("lists the catalogue with prices and the caller's own observations", async () => {
    const list = await json<ModelsList>(alice.client, '/dashboard/models');
    const mini = list.data.find((m) => m.model_id === 'gpt-4o-mini')!;
    expect(mini.prices[0]).toContain('/ 1M input tokens');
    expect(mini.observed).toMatchObject({ requests: served.a + served.b, refused: 0, errors: 0 });
    expect(mini.observed!.p50_latency_ms).not.toBeNull();
    // Key B's gpt-4o call was refused by its own policy before any supplier: it is not the model's error.
    expect(list.data.find((m) => m.model_id === 'gpt-4o')!.observed).toMatchObject({ requests: 1, refused: 1, errors: 0, error_rate: 0 });
    const refusedPage = await (await alice.client.get('/dashboard/models/gpt-4o', { accept: 'text/html' })).text();
    expect(refusedPage).toContain('1 refused by the gateway before any supplier');
    // Another member has observed nothing.
    expect((await json<ModelsList>(bob.client, '/dashboard/models')).data.every((m) => m.observed === null)).toBe(true);
    const html = await (await alice.client.get('/dashboard/models')).text();
    expect(html).toContain('href="/dashboard/models/gpt-4o-mini"');
  });

  it('shows one model per supplier route, and 404 for a model not in the catalogue', async () => {
    const detail = await json<{ suppliers: { supplier: string; observed: { requests: number } | null }[]; observed: { requests: number } }>(
      alice.client,
      '/dashboard/models/gpt-4o-mini?days=7',
    );
    expect(detail.observed.requests).toBe(served.a + served.b);
    // The catalogue routes gpt-4o-mini to sim-eu first, then sim-us; only sim-eu answered.
    expect(detail.suppliers.map((r) => [r.supplier, r.observed?.requests ?? 0])).toEqual([
      ['sim-eu', served.a + served.b],
      ['sim-us', 0],
    ]);
    expect((await alice.client.get('/dashboard/models/no-such-model', { accept: 'application/json' })).status).toBe(404);
    expect((await alice.client.get('/dashboard/models?days=0', { accept: 'application/json' })).status).toBe(422);
    expect((await alice.client.get('/dashboard/models?days=9999', { accept: 'application/json' })).status).toBe(422);
  });
});

describe("administrators' view", () => {
  it('follows admin mode and, for platform admins, the chosen organisation', async () => {
    const total = served.a + served.b + 1;
    const requests = async (client: PortalClient) => (await json<Report>(client, '/dashboard/api/usage')).totals.requests;
    // The org admin's own keys made nothing: admin mode off shows only them.
    const off = await admin.client.postJson('/dashboard/toggle-admin-mode', {});
    expect(await off.json()).toEqual({ admin_mode: false, admin_org_id: null });
    expect(await requests(admin.client)).toBe(0);
    await admin.client.postJson('/dashboard/toggle-admin-mode', {});
    expect(await requests(admin.client)).toBe(total);
    expect((await alice.client.postJson('/dashboard/toggle-admin-mode', {})).status).toBe(403);

    const platform = await signedIn({ role: 'platform_admin' });
    const knex = portal.database.knex;
    const [other] = (await knex('organisations')
      .insert({ name: 'Other', slug: `other-${Date.now()}` })
      .returning(['id', 'slug'])) as {
      id: number;
      slug: string;
    }[];
    expect((await platform.client.postJson('/dashboard/set-admin-org', { org_id: other!.id })).status).toBe(200);
    expect(await requests(platform.client)).toBe(0);
    expect((await json<LogPage>(platform.client, '/dashboard/request-log')).data).toHaveLength(0);
    const { slug } = (await knex('organisations').where({ id: orgId }).first('slug')) as { slug: string };
    expect(await (await platform.client.postJson('/dashboard/set-admin-domain', { domain: slug })).json()).toEqual({
      admin_mode: true,
      admin_org_id: orgId,
    });
    expect(await requests(platform.client)).toBe(total);
    await platform.client.postJson('/dashboard/set-admin-org', { org_id: '' });
    expect(await requests(platform.client)).toBeGreaterThanOrEqual(total);
    expect((await platform.client.postJson('/dashboard/set-admin-org', { org_id: 99_999_999 })).status).toBe(404);
    expect((await platform.client.postJson('/dashboard/set-admin-org', { org_id: 'acme' })).status).toBe(422);
    expect((await admin.client.postJson('/dashboard/set-admin-org', { org_id: orgId })).status).toBe(403);
    // Below platform admin the answer is 403 whether the organisation exists or not.
    for (const domain of [slug, 'no-such-organisation', ''])
      expect((await admin.client.postJson('/dashboard/set-admin-domain', { domain })).status, domain).toBe(403);
  });
});
