// A known path called with a method it does not answer is 405 method_not_allowed with an Allow
// header listing the path's methods (docs/interfaces.md); a path the gateway does not have at
// all stays 404 not_found.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import OpenAI, { toFile } from 'openai';
import { wavHeader } from '../support/wav.js';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';

interface ErrorBody {
  error: { code: string; type: string; human_message: string };
}

describe('wrong method on a known path', () => {
  let h: GatewayHarness;
  let key: string;

  beforeAll(async () => {
    h = await startGatewayHarness([{ name: 'sim-eu', region: 'EU', models: [{ id: 'gpt-4o-mini' }] }]);
    key = await h.createKey();
  });
  afterAll(async () => {
    await h?.close();
  });

  const call = (method: string, path: string, bearer: string) =>
    fetch(`${h.gateway.url}${path}`, { method, headers: { authorization: `Bearer ${bearer}` } });

  test('GET /v1/chat/completions is 405 with Allow: POST', async () => {
    const res = await call('GET', '/v1/chat/completions', key);
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
    const body = (await res.json()) as ErrorBody;
    expect(body.error.code).toBe('method_not_allowed');
    expect(body.error.human_message).toContain('/v1/chat/completions');
  });

  test('DELETE /v1/models lists GET and HEAD; a parameterised path lists its own methods', async () => {
    const models = await call('DELETE', '/v1/models', key);
    expect(models.status).toBe(405);
    expect(models.headers.get('allow')).toBe('GET, HEAD');
    const keyPath = await call('POST', '/v1/manage/keys/some-key-id', h.adminKey);
    expect(keyPath.status).toBe(405);
    expect(keyPath.headers.get('allow')).toBe('DELETE, GET, HEAD, PATCH');
    const revoke = await call('GET', '/v1/manage/keys/some-key-id/revoke', h.adminKey);
    expect(revoke.status).toBe(405);
    expect(revoke.headers.get('allow')).toBe('POST');
  });

  test('an unknown path stays 404 not_found, whatever the method', async () => {
    for (const method of ['GET', 'POST']) {
      const res = await call(method, '/v1/no-such-thing', key);
      expect(res.status).toBe(404);
      expect(res.headers.get('allow')).toBeNull();
      expect(((await res.json()) as ErrorBody).error.code).toBe('not_found');
    }
  });

  test('an unknown path is 404 before its body is read: broken JSON, invalid UTF-8, a multipart upload', async () => {
    const post = (path: string, body: string | Uint8Array, headers: Record<string, string> = {}) =>
      fetch(`${h.gateway.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, ...headers }, body });
    for (const body of ['{"broken', Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d])]) {
      const res = await post('/v1/nothing', body, { 'content-type': 'application/json' });
      expect(res.status).toBe(404);
      expect(((await res.json()) as ErrorBody).error.code).toBe('not_found');
    }
    // A known path with another method is 405 before its body is read, too.
    const wrong = await fetch(`${h.gateway.url}/v1/models`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: '{"broken',
    });
    expect(wrong.status).toBe(405);
    // The OpenAI SDK's audio.translations.create: a route the gateway does not have.
    const oa = new OpenAI({ apiKey: key, baseURL: `${h.gateway.url}/v1`, maxRetries: 0 });
    const wav = Buffer.concat([wavHeader(3200), Buffer.alloc(3200)]);
    const refused = await oa.audio.translations.create({ model: 'whisper', file: await toFile(wav, 'a.wav') }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(OpenAI.NotFoundError);
    expect((refused as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('not_found');
  });

  test("a transcription body that is not multipart is the route's 415, whatever its Content-Type (none included)", async () => {
    const wav = Buffer.concat([wavHeader(3200), Buffer.alloc(3200)]);
    for (const contentType of ['', 'audio/wav', 'application/json']) {
      const res = await fetch(`${h.gateway.url}/v1/audio/transcriptions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': contentType },
        body: wav,
      });
      expect(res.status, `content-type "${contentType}"`).toBe(415);
      expect(((await res.json()) as ErrorBody).error.code).toBe('unsupported_media_type');
    }
  });
});
