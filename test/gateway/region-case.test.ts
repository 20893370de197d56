// One rule for region codes on calls and on keys: any case is accepted and means the upper-case
// region ("eu" is EU), so a key created with allowed_regions "eu" serves a call with region "Eu".
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';

describe('region codes are matched without regard to case', () => {
  let h: GatewayHarness;
  const admin = (path: string, init: RequestInit = {}) =>
    fetch(`${h.gateway.url}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${h.adminKey}`, 'content-type': 'application/json', ...init.headers },
    });

  beforeAll(async () => {
    h = await startGatewayHarness([
      { name: 'sim-eu', region: 'EU', models: [{ id: 'gpt-4o-mini' }] },
      { name: 'sim-us', region: 'US', models: [{ id: 'gpt-4o-mini' }] },
    ]);
  });
  afterAll(async () => {
    await h?.close();
  });

  test('a key created and patched with lower-case regions stores them upper-case and routes by them', async () => {
    const created = await admin('/v1/manage/keys', { method: 'POST', body: JSON.stringify({ name: 'eu only', allowed_regions: 'eu' }) });
    expect(created.status).toBe(201);
    const key = (await created.json()) as { id: string; key: string; allowed_regions: string[] };
    expect(key.allowed_regions).toEqual(['EU']);

    const call = await fetch(`${h.gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', region: 'Eu', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(call.status).toBe(200);
    expect(call.headers.get('x-svc-supplier')).toBe('sim-eu');

    const patched = await admin(`/v1/manage/keys/${key.id}`, {
      method: 'PATCH',
      body: JSON.stringify({ allowed_regions: ['us', 'eu', 'EU'] }),
    });
    expect(patched.status).toBe(200);
    expect(((await patched.json()) as { allowed_regions: string[] }).allowed_regions.sort()).toEqual(['EU', 'US']);
  });

  test('a malformed region is still refused, naming the field', async () => {
    const res = await admin('/v1/manage/keys', { method: 'POST', body: JSON.stringify({ name: 'bad', allowed_regions: ['e u'] }) });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { param: string } };
    expect(body.error.param).toContain('allowed_regions');
  });
});
