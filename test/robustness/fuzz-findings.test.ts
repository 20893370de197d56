// What the fuzz suites found, kept as plain cases: each was a 500 or an answer outside the
// catalogue shape before its fix.
import { afterAll, beforeAll, describe, test } from 'vitest';
import assert from 'node:assert/strict';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';
import { assertCatalogueError, catalogueShapeProblems, rawExchange, send } from './support.js';

describe('cases the fuzzer found', () => {
  let h: GatewayHarness;
  let key: string;

  beforeAll(async () => {
    h = await startGatewayHarness([
      {
        name: 'sim-eu',
        region: 'EU',
        models: [{ id: 'whisper', upstream: 'whisper-1', usd_per_audio_minute: 0.006, capabilities: ['transcription'] }],
      },
    ]);
    key = await h.createKey();
  });
  afterAll(async () => {
    await h?.close();
  });

  test('a transcription form part without a name is a 400, not a 500', async () => {
    const boundary = 'b0undary';
    const wav = Buffer.alloc(44);
    wav.write('RIFF', 0, 'ascii');
    wav.write('WAVEfmt ', 8, 'ascii');
    const body = Buffer.concat([
      Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="model"\r\n\r\nwhisper\r\n`),
      Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name=""\r\n\r\nx\r\n`),
      Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="a.wav"\r\ncontent-type: audio/wav\r\n\r\n`),
      wav,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    const reply = await send(h.gateway.url, '/v1/audio/transcriptions', {
      key,
      body,
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
    });
    assertCatalogueError(reply, 400, 'validation_error');
  });

  const raw: { name: string; request: string; status: number; code: string }[] = [
    {
      name: 'a method the router does not know, without a version (HTTP/0.9 style)',
      request: `PRI /v1/models\r\nauthorization: Bearer KEY\r\n\r\n`,
      status: 404,
      code: 'not_found',
    },
    { name: 'an HTTP/1.1 request without Host', request: 'GET /health HTTP/1.1\r\n\r\n', status: 400, code: 'invalid_request' },
    {
      name: 'an Expect other than 100-continue',
      request: 'POST /v1/models HTTP/1.1\r\nhost: x\r\nexpect: close\r\ncontent-length: 0\r\n\r\n',
      status: 417,
      code: 'invalid_request',
    },
    {
      name: 'CONNECT',
      request: 'CONNECT example.com:443 HTTP/1.1\r\nhost: example.com:443\r\n\r\n',
      status: 405,
      code: 'method_not_allowed',
    },
  ];
  for (const c of raw) {
    test(`${c.name} is a catalogue ${c.status}`, async () => {
      const exchange = await rawExchange(h.gateway.port, [c.request.replace('KEY', key)], { end: true });
      assert.equal(exchange.status, c.status, exchange.received.slice(0, 300));
      assert.deepEqual(catalogueShapeProblems(c.status, exchange.body, exchange.headers['content-type']), []);
      assert.equal((JSON.parse(exchange.body) as { error: { code: string } }).error.code, c.code);
      assert.equal(exchange.closedByServer, true);
    });
  }
});
