// GET /v1/models is called by both SDK families, so it takes the credential of either:
// `Authorization: Bearer` (OpenAI SDK) or `x-api-key` (Anthropic SDK), as docs/interfaces.md says.
// A header the gateway reads that is sent twice is refused rather than guessed at.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';
import { rawRequest } from '../support/raw-request.js';

describe('GET /v1/models credentials', () => {
  let h: GatewayHarness;
  let key: string;

  beforeAll(async () => {
    h = await startGatewayHarness([{ name: 'sim-eu', region: 'EU', models: [{ id: 'gpt-4o-mini' }] }]);
    key = await h.createKey();
  });
  afterAll(async () => {
    await h?.close();
  });

  test('x-api-key is accepted, with or without anthropic-version', async () => {
    const plain = await fetch(`${h.gateway.url}/v1/models`, { headers: { 'x-api-key': key } });
    expect(plain.status).toBe(200);
    expect(((await plain.json()) as { data: { id: string }[] }).data.map((m) => m.id)).toContain('gpt-4o-mini');
    const anthropic = await fetch(`${h.gateway.url}/v1/models`, { headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01' } });
    expect(anthropic.status).toBe(200);
    expect(((await anthropic.json()) as { data: { type: string }[] }).data[0]?.type).toBe('model');
  });

  test('a wrong x-api-key is refused as invalid_api_key, not as a missing key', async () => {
    const res = await fetch(`${h.gateway.url}/v1/models`, { headers: { 'x-api-key': 'svc-sk-wrong' } });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('invalid_api_key');
  });

  test('x-api-key stays refused where only Bearer is documented', async () => {
    const res = await fetch(`${h.gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status).toBe(401);
    const error = ((await res.json()) as { error: { code: string; human_message: string } }).error;
    expect(error.code).toBe('missing_api_key');
    // It says why the key it was given is not read, rather than that none was sent.
    expect(error.human_message).toContain('this endpoint does not read x-api-key');
  });

  test('two different keys in Authorization and x-api-key are refused, not one picked', async () => {
    const headers = {
      authorization: `Bearer ${key}`,
      'x-api-key': `${key}x`,
      'content-type': 'application/json',
      'anthropic-version': '2023-06-01',
    };
    const res = await fetch(`${h.gateway.url}/v1/messages`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ model: 'gpt-4o-mini', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { human_message: string } }).error.human_message).toContain('Two different API keys');
    // The same key in both (some clients send both) is one key.
    const same = await fetch(`${h.gateway.url}/v1/models`, { headers: { authorization: `Bearer ${key}`, 'x-api-key': key } });
    expect(same.status).toBe(200);
  });

  test('two Authorization headers are refused, not the first taken', async () => {
    const other = await h.createKey();
    const answer = await rawRequest(
      h.gateway.url,
      `GET /v1/models HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer ${key}\r\nauthorization: Bearer ${other}\r\nConnection: close\r\n\r\n`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 401 /);
    expect(answer).toContain('sent more than once');
    // The same request with one of them is served.
    const one = await rawRequest(
      h.gateway.url,
      `GET /v1/models HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer ${key}\r\nConnection: close\r\n\r\n`,
    );
    expect(one).toMatch(/^HTTP\/1\.1 200 /);
    // Two x-api-key headers (joined by Node with a comma) say so too, even when they are the same key.
    const xApiKeyTwice = await rawRequest(
      h.gateway.url,
      `GET /v1/models HTTP/1.1\r\nHost: gateway\r\nx-api-key: ${key}\r\nX-Api-Key: ${key}\r\nConnection: close\r\n\r\n`,
    );
    expect(xApiKeyTwice).toMatch(/^HTTP\/1\.1 401 /);
    expect(xApiKeyTwice).toContain('The x-api-key header was sent more than once');
  });

  test('an HTTP/1.1 request without Host is refused and its connection closed, its body or not', async () => {
    const body = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
    // No `Connection: close` from the client: the gateway itself must end the connection
    // (rawRequest resolves only when it does), as it says it will.
    for (const request of [
      `POST /v1/chat/completions HTTP/1.1\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      `GET /v1/models HTTP/1.1\r\nAuthorization: Bearer ${key}\r\n\r\n`,
    ]) {
      const answer = await rawRequest(h.gateway.url, request);
      expect(answer).toMatch(/^HTTP\/1\.1 400 /);
      expect(answer).toContain('must carry a Host header');
      expect(answer.toLowerCase()).toContain('connection: close');
    }
  });

  test('two X-Session-Id headers are refused, not joined into one identifier', async () => {
    const body = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
    const post = (sessionHeaders: string) =>
      rawRequest(
        h.gateway.url,
        `POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
          `${sessionHeaders}Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    const twice = await post('X-Session-Id: alpha\r\nx-session-id: beta\r\n');
    expect(twice).toMatch(/^HTTP\/1\.1 400 /);
    expect(twice).toContain('X-Session-Id header was sent more than once');
    expect(await post('X-Session-Id: alpha, beta\r\n')).toMatch(/^HTTP\/1\.1 200 /);
  });
});
