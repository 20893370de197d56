// Finding 5 of issue 13: slow bodies were never timed out — a JSON body at 1 byte/s was still open
// after 330 s, a 401 was answered at once but the trickled body still read, and 2,000 such
// connections took the gateway to 2,032 file descriptors. Every request now has a deadline for its
// headers and body (SVC_HEADERS_TIMEOUT_MS, SVC_BODY_TIMEOUT_MS), and a request answered before
// its body arrived has its connection closed instead of read to the end.
import { afterAll, beforeAll, describe, test } from 'vitest';
import assert from 'node:assert/strict';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';
import { catalogueShapeProblems, rawExchange } from './support.js';

describe('slow and stalled requests', () => {
  let h: GatewayHarness;
  let key: string;
  /** Ceiling of each exchange: far above the deadlines, so only a missing deadline reaches it. */
  const ceilingMs = 15_000;

  beforeAll(async () => {
    h = await startGatewayHarness(undefined, { settings: { SVC_BODY_TIMEOUT_MS: '600', SVC_HEADERS_TIMEOUT_MS: '400' } });
    key = await h.createKey();
  });
  afterAll(async () => {
    await h?.close();
  });

  const head = (path: string, headers: Record<string, string>, length: number) =>
    `POST ${path} HTTP/1.1\r\nhost: gateway\r\ncontent-type: application/json\r\ncontent-length: ${length}\r\n${Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('')}\r\n`;
  const body = JSON.stringify({
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'hello there, a body sent one byte at a time' }],
  });
  /** The body one byte per chunk, the last never sent: a client trickling and then stalling. */
  const trickle = [...body.slice(0, -1)];

  test('a body trickled past the deadline is answered 408 in the catalogue shape and the connection closed', async () => {
    const exchange = await rawExchange(
      h.gateway.port,
      [head('/v1/chat/completions', { authorization: `Bearer ${key}` }, body.length), ...trickle],
      { waitMs: ceilingMs, intervalMs: 50 },
    );
    assert.equal(exchange.closedByServer, true, 'the gateway closed the connection');
    assert.equal(exchange.status, 408, exchange.received.slice(0, 300));
    assert.deepEqual(catalogueShapeProblems(exchange.status!, exchange.body, exchange.headers['content-type']), []);
    assert.equal((JSON.parse(exchange.body) as { error: { code: string } }).error.code, 'request_timeout');
  });

  test('a stalled body on the multipart route has the same deadline', async () => {
    const exchange = await rawExchange(
      h.gateway.port,
      [
        `POST /v1/audio/transcriptions HTTP/1.1\r\nhost: gateway\r\nauthorization: Bearer ${key}\r\ncontent-type: multipart/form-data; boundary=b\r\ncontent-length: 100000\r\n\r\n--b\r\n`,
      ],
      { waitMs: ceilingMs },
    );
    assert.equal(exchange.closedByServer, true);
    assert.ok(exchange.status === 408, exchange.received.slice(0, 300));
    assert.deepEqual(catalogueShapeProblems(exchange.status, exchange.body, exchange.headers['content-type']), []);
  });

  test('a request without a key is answered 401 and its connection closed without reading the trickled body', async () => {
    const exchange = await rawExchange(h.gateway.port, [head('/v1/chat/completions', {}, body.length), ...trickle], {
      waitMs: ceilingMs,
      intervalMs: 50,
    });
    assert.equal(exchange.status, 401, exchange.received.slice(0, 300));
    assert.deepEqual(catalogueShapeProblems(401, exchange.body, exchange.headers['content-type']), []);
    assert.equal(exchange.closedByServer, true, 'the gateway closed the connection');
  });

  test('headers that never finish arriving are answered 408 in the catalogue shape', async () => {
    const exchange = await rawExchange(h.gateway.port, ['GET /v1/models HTTP/1.1\r\nhost: gateway\r\n', 'x-slow: 1\r\n'], {
      waitMs: ceilingMs,
      intervalMs: 50,
    });
    assert.equal(exchange.closedByServer, true);
    assert.equal(exchange.status, 408, exchange.received.slice(0, 300));
    assert.deepEqual(catalogueShapeProblems(408, exchange.body, exchange.headers['content-type']), []);
  });

  test('a request that arrives in time is served as before', async () => {
    const exchange = await rawExchange(
      h.gateway.port,
      [head('/v1/chat/completions', { authorization: `Bearer ${key}`, connection: 'close' }, body.length) + body],
      { waitMs: ceilingMs },
    );
    assert.equal(exchange.status, 200, exchange.received.slice(0, 300));
  });
});
