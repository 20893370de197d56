// The quality explorer: public and metadata only (no key, user or text), rows with too few
// requests withheld, the JSON identical to the HTML snapshot and the CSV, per-request detail
// refused with a documented 403, and availability changed by a platform admin only.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import type { PortalClient } from '../support/portal-client.js';
import type { PortalHarness } from '../support/portal-harness.js';
import type { GatewayHarness } from '../support/gateway-harness.js';
import { fundWallet, signUp, startPortalWithGateway } from '../support/portal-users.js';
import { waitFor } from '../support/wait-for.js';

let world: Awaited<ReturnType<typeof startPortalWithGateway>>;
let portal: PortalHarness;
let gateway: GatewayHarness;
let owner: PortalClient;
let member: PortalClient;

const signedIn = (email: string, role = 'member') => signUp(portal, { email, role, name: 'Quinn Quality' });

beforeAll(async () => {
  const models = [{ id: 'gpt-4o-mini' }, { id: 'gpt-4o', input_usd_per_mtok: 2.5, output_usd_per_mtok: 10 }];
  world = await startPortalWithGateway([{ name: 'sim-eu', region: 'EU', models }]);
  ({ portal, gateway } = world);
  owner = (await signedIn(`quality-owner-${Date.now()}@example.com`, 'platform_admin')).client;
  const user = await signedIn(`quality-member-${Date.now()}@example.com`);
  member = user.client;
  await fundWallet(gateway, `user:${user.id}`, 5);
  const { secret } = (await (await member.postJson('/dashboard/keys/new', { name: 'secret project falcon' })).json()) as { secret: string };
  const sdk = new OpenAI({ baseURL: `${gateway.gateway.url}/v1`, apiKey: secret, maxRetries: 0 });
  for (const [model, times] of [
    ['gpt-4o-mini', 6],
    ['gpt-4o', 2],
  ] as const)
    for (let i = 0; i < times; i++)
      await sdk.chat.completions.create({ model, messages: [{ role: 'user', content: 'confidential prompt text' }], max_tokens: 5 });
  await waitFor('eight audit rows', async () => {
    const [row] = await portal.database.knex('audit_log').count({ n: '*' });
    return Number((row as { n: string }).n) === 8;
  });
});
afterAll(async () => {
  await world?.close();
});

interface Snapshot {
  rows: Record<string, string | number | null>[];
  withheld: number;
  min_requests: number;
}

describe('the quality explorer', () => {
  it('is public, metadata only, withholds thin rows, and its JSON, HTML and CSV agree', async () => {
    const res = await fetch(`${portal.url}/dashboard/api/qualitative`);
    expect(res.status).toBe(200);
    const text = await res.text();
    const snapshot = JSON.parse(text) as Snapshot;
    expect(snapshot.rows).toEqual([
      expect.objectContaining({
        model: 'gpt-4o-mini',
        supplier: 'sim-eu',
        requests: 6,
        success_rate: 1,
        avg_output_tokens: expect.any(Number),
      }),
    ]);
    expect(snapshot.withheld).toBe(1);
    for (const secretThing of ['falcon', 'confidential', 'quality-member', 'svc-sk-']) expect(text).not.toContain(secretThing);

    // The HTML table holds exactly the JSON's numbers.
    const html = await (await fetch(`${portal.url}/dashboard/qualitative`)).text();
    const rows = [...html.matchAll(/<tr data-model="([^"]+)" data-supplier="([^"]+)">([\s\S]*?)<\/tr>/g)].map(
      ([, model, supplier, cells]) => {
        const values = Object.fromEntries(
          [...cells!.matchAll(/data-field="(\w+)" data-value="([^"]*)"/g)].map(([, f, v]) => [f, v === '' ? null : Number(v)]),
        );
        return { model, supplier, ...values };
      },
    );
    expect(rows).toEqual(snapshot.rows);
    expect(html).toContain('data-testid="quality-withheld"');

    const csv = (await (await fetch(`${portal.url}/dashboard/qualitative/export`)).text()).trim().split('\r\n');
    expect(csv).toHaveLength(2);
    expect(csv[1]!.startsWith('gpt-4o-mini,sim-eu,6,1,')).toBe(true);

    const detail = await fetch(`${portal.url}/dashboard/qualitative/detail/req_abc`, { headers: { accept: 'application/json' } });
    expect(detail.status).toBe(403);
    expect(((await detail.json()) as { human_message: string }).human_message).toMatch(/not available in the public quality explorer/);
    expect((await fetch(`${portal.url}/dashboard/api/qualitative?days=0`)).status).toBe(422);
  });

  it('follows the availability a platform admin sets', async () => {
    expect((await member.postJson('/dashboard/qualitative/settings', { availability: 'off', min_requests: 1 })).status).toBe(403);
    expect((await owner.postJson('/dashboard/qualitative/settings', { availability: 'sometimes', min_requests: 1 })).status).toBe(422);

    expect((await owner.postJson('/dashboard/qualitative/settings', { availability: 'signed_in', min_requests: 1 })).status).toBe(200);
    expect((await fetch(`${portal.url}/dashboard/api/qualitative`)).status).toBe(401);
    const page = await fetch(`${portal.url}/dashboard/qualitative`, { redirect: 'manual' });
    expect(page.status).toBe(303);
    const signedInView = (await (await member.get('/dashboard/api/qualitative')).json()) as Snapshot;
    expect(signedInView.rows.map((r) => r.model).sort()).toEqual(['gpt-4o', 'gpt-4o-mini']);

    expect((await owner.postJson('/dashboard/qualitative/settings', { availability: 'off', min_requests: 5 })).status).toBe(200);
    expect((await member.get('/dashboard/api/qualitative')).status).toBe(404);
    expect((await owner.postJson('/dashboard/qualitative/settings', { availability: 'public', min_requests: 5 })).status).toBe(200);
    expect((await fetch(`${portal.url}/dashboard/api/qualitative`)).status).toBe(200);
  });
});
