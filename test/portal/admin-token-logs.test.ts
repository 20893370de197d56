// Credential pools administered in the portal (SVC_CATALOG_SOURCE=database) and watched there: a
// platform admin creates a provider with a pool of keys (stored encrypted, never shown back); the
// gateway spreads calls over it and sidelines the key the supplier rate-limits; the token log
// (`GET /api/admin/token-logs`, every query parameter of the seed with its default) and the proxy
// health view show it; replacing the pool is logged as rotations and reaches the gateway.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fundWallet, signUp, startPortalWithGateway, type SignedInUser } from '../support/portal-users.js';
import { waitFor } from '../support/wait-for.js';

const provider = `pooled-${process.pid}`;
const seen: Record<string, number> = {};
let server: Server;
let supplierUrl: string;
let world: Awaited<ReturnType<typeof startPortalWithGateway>>;
let platform: SignedInUser;
let secret: string;

interface TokenLog {
  query: Record<string, unknown>;
  total: number;
  by_kind: Record<string, number>;
  has_more: boolean;
  data: {
    provider: string;
    key_name: string;
    kind: string;
    at_ms: number;
    source: string;
    message: string | null;
    error_kind: string | null;
  }[];
}

const logs = async (query = '', status = 200) => {
  const res = await platform.client.get(`/api/admin/token-logs${query}`, { accept: 'application/json' });
  expect(res.status, await res.clone().text()).toBe(status);
  return (await res.json()) as TokenLog;
};
const ask = () =>
  new OpenAI({ baseURL: `${world.gateway.gateway.url}/v1`, apiKey: secret, maxRetries: 0 }).chat.completions.create({
    model: 'pool-model',
    messages: [{ role: 'user', content: 'hi' }],
    max_tokens: 5,
  });

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const key = (req.headers.authorization ?? '').replace('Bearer ', '');
      seen[key] = (seen[key] ?? 0) + 1;
      res.setHeader('content-type', 'application/json');
      if (key === 'secret-a') {
        res.writeHead(429, { 'retry-after': '600' });
        return res.end(JSON.stringify({ error: { message: 'slow down', type: 'requests', code: 'rate_limit_exceeded' } }));
      }
      res.end(
        JSON.stringify({
          id: 'x',
          object: 'chat.completion',
          created: 1,
          model: 'pool-model',
          choices: [{ index: 0, message: { role: 'assistant', content: `served with ${key}` }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 2, completion_tokens: 2, total_tokens: 4 },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  supplierUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  world = await startPortalWithGateway(undefined, { settings: { SVC_CATALOG_SOURCE: 'database' } }, { SVC_CATALOG_SOURCE: 'database' });
  platform = await signUp(world.portal, { role: 'platform_admin' });
  const user = await signUp(world.portal);
  await fundWallet(world.gateway, `user:${user.id}`, 20);
  ({ secret } = (await (await user.client.postJson('/dashboard/keys/new', { name: 'pool key' })).json()) as { secret: string });
});
afterAll(async () => {
  await world?.close();
  await new Promise((resolve) => server?.close(resolve));
});

describe('credential pools in the portal', () => {
  it('a pool created by an admin serves, sidelines the rate-limited key, and the token log and proxy health show it', async () => {
    const created = await platform.client.postJson('/dashboard/admin/providers', {
      name: provider,
      protocol: 'openai',
      base_url: supplierUrl,
      region: 'EU',
      credentials: [
        { name: 'key-a', api_key: 'secret-a' },
        { name: 'key-b', api_key: 'secret-b' },
      ],
      models: [{ id: 'pool-model', input_usd_per_mtok: 1, output_usd_per_mtok: 1 }],
    });
    expect(created.status, await created.clone().text()).toBe(201);
    const body = await created.text();
    expect(body).not.toContain('secret-a');
    const listed = (JSON.parse(body) as { catalogue: { providers: { name: string; credentials: unknown }[] } }).catalogue.providers.find(
      (p) => p.name === provider,
    )!;
    expect(listed.credentials).toEqual([
      { name: 'key-a', api_key: 'stored' },
      { name: 'key-b', api_key: 'stored' },
    ]);
    const stored = JSON.stringify(await world.portal.database.knex('catalogue_providers').where({ name: provider }).first('credentials'));
    expect(stored).not.toContain('secret-a');

    // Rejections of bad pools name the field.
    for (const credentials of [
      [{ name: 'Bad Name', api_key: 'x' }],
      [{ name: 'new-one' }],
      [{ name: 'k', api_key: 'x', api_key_env: 'K' }],
    ]) {
      const res = await platform.client.postJson('/dashboard/admin/providers', {
        name: `${provider}-bad`,
        protocol: 'openai',
        base_url: supplierUrl,
        region: 'EU',
        credentials,
        models: [{ id: 'pool-model', input_usd_per_mtok: 1 }],
      });
      expect(res.status, JSON.stringify(credentials)).toBe(422);
    }

    await waitFor('the gateway to serve the new provider', () =>
      ask().then(
        () => true,
        () => false,
      ),
    );
    for (let i = 0; i < 4; i++) expect((await ask()).choices[0]!.message.content).toBe('served with secret-b');
    expect(seen['secret-a']).toBe(1);

    await waitFor('the event in the token log', async () => (await logs(`?provider=${provider}&kinds=rate_limited`)).total === 1);
    const all = await logs(`?provider=${provider}`);
    // Defaults echoed, as the seed's table gives them.
    expect(all.query).toEqual({
      provider,
      key_name: '',
      limit: 100,
      kinds: '',
      since_ms: 0,
      offset: 0,
      window_hours: 24,
      source: '',
      error_kind: '',
    });
    const limited = all.data.find((e) => e.kind === 'rate_limited')!;
    expect(limited).toMatchObject({ key_name: 'key-a', source: 'gateway', error_kind: 'rate_limit_exceeded' });
    // The admin's creation is logged as two rotations.
    expect(all.by_kind).toMatchObject({ rotated: 2, rate_limited: 1 });
    // Each filter narrows.
    expect((await logs(`?provider=${provider}&key_name=key-b&kinds=rate_limited`)).total).toBe(0);
    expect((await logs(`?provider=${provider}&source=admin`)).data.every((e) => e.kind === 'rotated')).toBe(true);
    expect((await logs(`?provider=${provider}&error_kind=rate_limit_exceeded`)).total).toBe(1);
    expect((await logs(`?provider=${provider}&since_ms=${limited.at_ms}`)).data.some((e) => e.kind === 'rate_limited')).toBe(false);
    const page = await logs(`?provider=${provider}&limit=1&offset=1`);
    expect(page.data).toHaveLength(1);
    expect(page.data[0]).toEqual(all.data[1]);
    expect(page.has_more).toBe(true);
    for (const bad of [
      '?limit=0',
      '?limit=1001',
      '?kinds=bogus',
      '?window_hours=0',
      '?offset=-1',
      '?since_ms=abc',
      '?source=robot',
      '?color=red',
    ])
      await logs(bad, 422);
    // Infrastructure: platform admins only.
    const orgAdmin = await signUp(world.portal, { role: 'org_admin' });
    expect((await orgAdmin.client.get('/api/admin/token-logs', { accept: 'application/json' })).status).toBe(403);

    const health = (await (await platform.client.get('/dashboard/admin/api/proxy-health', { accept: 'application/json' })).json()) as {
      suppliers: {
        supplier: string;
        circuit: string;
        credentials: { name: string; state: string; sidelined_until: string | null; events_last_hour: Record<string, number> }[];
      }[];
    };
    const pooled = health.suppliers.find((s) => s.supplier === provider)!;
    expect(pooled.circuit).toBe('closed');
    expect(pooled.credentials.find((c) => c.name === 'key-a')).toMatchObject({ state: 'sidelined', events_last_hour: { rate_limited: 1 } });
    expect(new Date(pooled.credentials.find((c) => c.name === 'key-a')!.sidelined_until!).getTime()).toBeGreaterThan(Date.now() + 500_000);
    expect(pooled.credentials.find((c) => c.name === 'key-b')).toMatchObject({ state: 'in_rotation', sidelined_until: null });
  });

  it('replacing the pool is logged as rotations and reaches the gateway', async () => {
    const overview = (await (await platform.client.get('/dashboard/admin/models', { accept: 'application/json' })).json()) as {
      providers: { provider_id: number; name: string }[];
    };
    const id = overview.providers.find((p) => p.name === provider)!.provider_id;
    const updated = await platform.client.postJson(`/dashboard/admin/providers/${id}/update`, {
      credentials: [{ name: 'key-b' }, { name: 'key-c', api_key: 'secret-c' }],
    });
    expect(updated.status, await updated.clone().text()).toBe(200);
    const rotations = (await logs(`?provider=${provider}&kinds=rotated&source=admin`)).data.map((e) => `${e.key_name}:${e.message}`);
    expect(rotations).toEqual(expect.arrayContaining(['key-a:removed', 'key-c:added']));
    expect(rotations.filter((r) => r.startsWith('key-b:'))).toHaveLength(1); // only its creation: kept unchanged now
    await waitFor('the gateway to use the new key', async () => (await ask()).choices[0]!.message.content === 'served with secret-c');
    const before = seen['secret-a'];
    for (let i = 0; i < 4; i++) await ask();
    expect(seen['secret-a']).toBe(before);
  });
});
