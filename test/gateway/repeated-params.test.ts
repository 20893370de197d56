// A header or query parameter sent twice is refused as sent twice (outside probe): Node joins a
// repeated `anthropic-version` into "2023-06-01, 2023-06-01", which read as a bad date, and
// fastify parses `limit=2&limit=3` into a list, which read as "expected number, received NaN".
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { request } from 'undici';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';

describe('repeated headers and query parameters', () => {
  let h: GatewayHarness;
  let secret: string;

  beforeAll(async () => {
    h = await startGatewayHarness([{ name: 'sim-eu', region: 'EU', models: [{ id: 'gpt-4o-mini' }] }]);
    secret = await h.createKey();
  });
  afterAll(async () => {
    await h?.close();
  });

  const errorOf = async (res: Awaited<ReturnType<typeof request>>) => ({
    status: res.statusCode,
    ...((await res.body.json()) as { error: { code: string; param: string; human_message: string } }),
  });

  test('anthropic-version sent twice on /v1/messages says so', async () => {
    const body = JSON.stringify({ model: 'gpt-4o-mini', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] });
    const headers = ['x-api-key', secret, 'content-type', 'application/json'];
    const twice = await errorOf(
      await request(`${h.gateway.url}/v1/messages`, {
        method: 'POST',
        headers: [...headers, 'anthropic-version', '2023-06-01', 'anthropic-version', '2023-06-01'],
        body,
      }),
    );
    expect(twice.status).toBe(400);
    expect(twice.error.param).toBe('anthropic-version');
    expect(twice.error.human_message).toMatch(/sent more than once/);
    // One bad value is still a bad date.
    const bad = await errorOf(
      await request(`${h.gateway.url}/v1/messages`, { method: 'POST', headers: [...headers, 'anthropic-version', 'yesterday'], body }),
    );
    expect(bad.error.human_message).toMatch(/must be a date/);
  });

  test('limit given twice on GET /v1/models (Anthropic shape) and on the Management API says so', async () => {
    const models = await errorOf(
      await request(`${h.gateway.url}/v1/models?limit=2&limit=3`, { headers: ['x-api-key', secret, 'anthropic-version', '2023-06-01'] }),
    );
    expect(models.status).toBe(400);
    expect(models.error.code).toBe('validation_error');
    expect(models.error.param).toBe('limit');
    expect(models.error.human_message).toMatch(/"limit" query parameter was given more than once/);
    const keys = await errorOf(
      await request(`${h.gateway.url}/v1/manage/keys?limit=2&limit=3`, { headers: ['authorization', `Bearer ${h.adminKey}`] }),
    );
    expect(keys.status).toBe(400);
    expect(keys.error.param).toBe('limit');
    expect(keys.error.human_message).toMatch(/given more than once/);
  });
});
