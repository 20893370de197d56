// Providers, models and prices in PostgreSQL (SVC_CATALOG_SOURCE=database) with a portal and two
// gateway replicas sharing the database and store: the file seeds the catalogue; a price changed
// by a platform admin is charged by both replicas from their next request; a provider created
// with an API key serves at once, its key stored encrypted and never shown back; bad providers
// are refused naming the field; a deleted provider stops serving.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import type { RunningGateway } from '../../gateway/src/server.js';
import type { PortalHarness } from '../support/portal-harness.js';
import type { GatewayHarness } from '../support/gateway-harness.js';
import { fundWallet, signUp, startPortalWithGateway, type SignedInUser } from '../support/portal-users.js';
import { waitFor } from '../support/wait-for.js';

let world: Awaited<ReturnType<typeof startPortalWithGateway>>;
let portal: PortalHarness;
let gateway: GatewayHarness;
let replica: RunningGateway;
let platform: SignedInUser;
let secret: string;

interface Overview {
  source: string;
  version: number;
  providers: { provider_id: number; name: string; api_key: string | null; models: { id: string; input_usd_per_mtok?: number }[] }[];
}

const overview = async () => {
  const res = await platform.client.get('/dashboard/admin/models', { accept: 'application/json' });
  expect(res.status).toBe(200);
  return (await res.json()) as Overview;
};

/** One call through a replica: its model's cost header and token counts. */
const call = async (baseUrl: string, model = 'gpt-4o-mini') => {
  const { data, response } = await new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey: secret, maxRetries: 0 }).chat.completions
    .create({ model, messages: [{ role: 'user', content: 'price check' }], max_tokens: 8 })
    .withResponse();
  return { cost: Number(response.headers.get('x-svc-cost-usd')), input: data.usage!.prompt_tokens, output: data.usage!.completion_tokens };
};
const expected = (c: { input: number; output: number }, inPrice: number, outPrice: number) =>
  (c.input * inPrice + c.output * outPrice) / 1e6;

beforeAll(async () => {
  world = await startPortalWithGateway(undefined, { settings: { SVC_CATALOG_SOURCE: 'database' } }, { SVC_CATALOG_SOURCE: 'database' });
  ({ portal, gateway } = world);
  replica = await gateway.startReplica();
  platform = await signUp(portal, { role: 'platform_admin' });
  const user = await signUp(portal);
  await fundWallet(gateway, `user:${user.id}`, 50);
  ({ secret } = (await (await user.client.postJson('/dashboard/keys/new', { name: 'catalogue key' })).json()) as { secret: string });
});
afterAll(async () => {
  await world?.close();
});

describe('the catalogue in the database', () => {
  it('is seeded from the file, and a price change is charged by every replica from the next request', async () => {
    const before = await overview();
    expect(before).toMatchObject({ source: 'database', version: 1 });
    const sim = before.providers.find((p) => p.name === 'sim-eu')!;
    expect(sim.models[0]).toMatchObject({ id: 'gpt-4o-mini', input_usd_per_mtok: 0.15 });
    const old = await call(gateway.gateway.url);
    expect(old.cost).toBeCloseTo(expected(old, 0.15, 0.6), 9);

    const res = await platform.client.postForm('/dashboard/admin/prices', {
      provider_id: String(sim.provider_id),
      model_id: 'gpt-4o-mini',
      input_usd_per_mtok: '150',
      cached_input_usd_per_mtok: '',
      output_usd_per_mtok: '600',
    });
    expect(res.status, await res.clone().text()).toBe(303);
    expect(res.headers.get('location')).toBe('/dashboard/admin/models?tab=prices');
    expect((await overview()).version).toBe(2);
    for (const url of [gateway.gateway.url, replica.url]) {
      await waitFor(
        `${url} to charge the new price`,
        async () => {
          const c = await call(url);
          return Math.abs(c.cost - expected(c, 150, 600)) < 1e-9;
        },
        10_000,
        50,
      );
    }
  });

  it('creates a provider with an encrypted key that serves at once, refuses bad ones, and deletes it', async () => {
    const simUrl = (await overview()).providers.find((p) => p.name === 'sim-eu')!;
    const base = (
      (await portal.database.knex('catalogue_providers').where({ id: simUrl.provider_id }).first('base_url')) as { base_url: string }
    ).base_url;
    const created = await platform.client.postJson('/dashboard/admin/providers', {
      name: 'acme-eu',
      protocol: 'openai',
      base_url: base,
      region: 'EU',
      api_key: 'sk-acme-secret-value-123',
      models: [{ id: 'acme-large', input_usd_per_mtok: 3, output_usd_per_mtok: 15 }],
    });
    expect(created.status, await created.clone().text()).toBe(201);
    const body = (await created.json()) as { provider_id: number; catalogue: Overview };
    expect(JSON.stringify(body)).not.toContain('sk-acme-secret-value-123');
    expect(body.catalogue.providers.find((p) => p.name === 'acme-eu')?.api_key).toBe('stored');
    const stored = (await portal.database.knex('catalogue_providers').where({ name: 'acme-eu' }).first('api_key_ciphertext')) as {
      api_key_ciphertext: string;
    };
    expect(stored.api_key_ciphertext).toMatch(/^v1:/);
    expect(stored.api_key_ciphertext).not.toContain('acme-secret');
    await waitFor(
      'both replicas to serve the new model',
      async () => {
        const results = await Promise.all(
          [gateway.gateway.url, replica.url].map((url) =>
            call(url, 'acme-large').then(
              () => true,
              () => false,
            ),
          ),
        );
        return results.every(Boolean);
      },
      10_000,
      50,
    );
    // The supplier received the stored key.
    const requests = gateway.simulators.get('sim-eu')!.requests;
    expect(requests.at(-1)!.headers.authorization).toBe('Bearer sk-acme-secret-value-123');

    const refuse = async (body: Record<string, unknown>, status: number, text: string) => {
      const res = await platform.client.postJson('/dashboard/admin/providers', body);
      const answer = await res.text();
      expect(res.status, answer).toBe(status);
      expect(answer).toContain(text);
    };
    const good = {
      name: 'other',
      protocol: 'openai',
      base_url: 'https://api.example.com/v1',
      region: 'EU',
      models: [{ id: 'm', input_usd_per_mtok: 1 }],
    };
    await refuse({ ...good, base_url: 'http://169.254.169.254/latest' }, 422, 'base_url');
    await refuse({ ...good, base_url: 'http://[::ffff:169.254.169.254]/' }, 422, 'base_url');
    await refuse({ ...good, base_url: 'http://metadata.google.internal/' }, 422, 'base_url');
    await refuse({ ...good, base_url: 'ftp://example.com' }, 422, 'base_url');
    await refuse({ ...good, name: 'acme-eu' }, 409, 'acme-eu');
    await refuse({ ...good, models: [{ id: 'free-by-omission' }] }, 422, 'price');
    await refuse({ ...good, name: 'Bad Name' }, 422, 'name');
    await refuse({ ...good, models: [] }, 422, 'models');

    const acme = (await overview()).providers.find((p) => p.name === 'acme-eu')!;
    // An update names only fields it may change: the name (the provider's identity), a misspelling
    // or nothing at all is a 422 naming the problem, never a 200 that changed nothing.
    for (const [body, text] of [
      [{ name: 'renamed' }, 'name'],
      [{ regoin: 'US' }, 'regoin'],
      [{}, 'send at least one'],
    ] as const) {
      const res = await platform.client.postJson(`/dashboard/admin/providers/${acme.provider_id}/update`, body);
      const answer = await res.text();
      expect(res.status, answer).toBe(422);
      expect(answer).toContain(text);
    }
    const deleted = await platform.client.postJson(`/dashboard/admin/providers/${acme.provider_id}/delete`, {});
    expect(deleted.status).toBe(200);
    await waitFor(
      'the deleted provider to stop serving',
      async () =>
        call(replica.url, 'acme-large').then(
          () => false,
          (e: unknown) => e instanceof OpenAI.APIError && e.status === 404,
        ),
      10_000,
      50,
    );
    expect((await platform.client.postJson(`/dashboard/admin/providers/${acme.provider_id}/delete`, {})).status).toBe(404);
    const only = (await overview()).providers;
    expect(only).toHaveLength(1);
    expect((await platform.client.postJson(`/dashboard/admin/providers/${only[0]!.provider_id}/delete`, {})).status).toBe(409);
  });

  it('is for platform admins only, and the page renders its tabs', async () => {
    const orgAdmin = await signUp(portal, { role: 'org_admin' });
    expect((await orgAdmin.client.get('/dashboard/admin/models', { accept: 'application/json' })).status).toBe(403);
    expect(
      (await orgAdmin.client.postJson('/dashboard/admin/prices', { provider_id: 1, model_id: 'gpt-4o-mini', input_usd_per_mtok: 0 }))
        .status,
    ).toBe(403);
    for (const tab of ['models', 'providers', 'prices'])
      expect(await (await platform.client.get(`/dashboard/admin/models?tab=${tab}`)).text()).toContain(`data-testid="catalogue-${tab}"`);
    const redirect = await platform.client.get('/dashboard/admin/prices');
    expect(redirect.status).toBe(303);
    expect(redirect.headers.get('location')).toBe('/dashboard/admin/models?tab=prices');
  });

  it('creates and deletes a provider from the page without JavaScript, never putting its key in an address', async () => {
    const page = await (await platform.client.get('/dashboard/admin/models?tab=providers')).text();
    // A form without a method would be sent as a GET, with the key in the URL and the history.
    expect(page).toMatch(/<form method="post" action="\/dashboard\/admin\/providers" [^>]*data-testid="provider-form"/);
    const form = {
      name: 'form-made',
      protocol: 'openai',
      base_url: 'https://form-made.example.com/v1',
      region: 'EU',
      priority: '50',
      api_key: 'sk-typed-in-a-form-123',
      models: '[{"id": "form-model", "input_usd_per_mtok": 1, "output_usd_per_mtok": 2}',
    };
    // Broken JSON in the models box: the page again, the problem named, what was typed kept — but not the key.
    const refused = await platform.client.postForm('/dashboard/admin/providers', form, { accept: 'text/html' });
    expect(refused.status).toBe(422);
    const html = await refused.text();
    expect(html).toContain('models: must be a JSON list of models');
    expect(html).toContain('value="https://form-made.example.com/v1"');
    expect(html).toContain('[{&#34;id&#34;: &#34;form-model&#34;');
    expect(html).not.toContain('sk-typed-in-a-form-123');
    const made = await platform.client.postForm('/dashboard/admin/providers', { ...form, models: `${form.models}]` });
    expect([made.status, made.headers.get('location')]).toEqual([303, '/dashboard/admin/models?tab=providers']);
    const created = (await overview()).providers.find((p) => p.name === 'form-made')!;
    expect(created).toMatchObject({ api_key: 'stored', models: [{ id: 'form-model', input_usd_per_mtok: 1 }] });
    // Deleting takes a second, deliberate click: the button only shows inside its confirmation.
    const listed = await (await platform.client.get('/dashboard/admin/models?tab=providers')).text();
    expect(listed).toMatch(
      new RegExp(
        `<details class="confirm"><summary[^>]*>Delete</summary><form method="post" action="/dashboard/admin/providers/${created.provider_id}/delete">`,
      ),
    );
    const deleted = await platform.client.postForm(`/dashboard/admin/providers/${created.provider_id}/delete`, {});
    expect(deleted.status).toBe(303);
    expect((await overview()).providers.some((p) => p.name === 'form-made')).toBe(false);
  });
});
