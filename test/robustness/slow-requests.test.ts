// Finding 5 of issue 13: slow bodies were never timed out — a JSON body at 1 byte/s was still open
// after 330 s, a 401 was answered at once but the trickled body still read, and 2,000 such
// connections took the gateway to 2,032 file descriptors. Every request now has a deadline for its
// headers and body (SVC_HEADERS_TIMEOUT_MS, SVC_BODY_TIMEOUT_MS), and a request answered before
// its body arrived has its connection closed instead of read to the end.
import { afterAll, beforeAll, describe, test } from 'vitest';
import assert from 'node:assert/strict';
import { Agent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
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
    // Said before it is done: a pooled client must not send its next request into this connection.
    assert.equal(exchange.headers.connection, 'close');
  });

  test('a refused request whose body came whole keeps its connection: the next request on it is served', async () => {
    // A pooled HTTP/1.1 client (one socket), as Python's, Go's or a shared proxy's: the 401 said
    // keep-alive, so its next request goes down the same connection and must be answered there.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      for (const refusal of [{}, { authorization: 'Basic Zm9vOmJhcg==' }, { authorization: 'Bearer ' }, { 'x-api-key': key }] as Record<
        string,
        string
      >[]) {
        const refused = await post(agent, refusal);
        assert.equal(refused.status, 401, JSON.stringify(refusal));
        assert.notEqual(refused.headers.connection, 'close');
        const served = await post(agent, { authorization: `Bearer ${key}` });
        assert.equal(served.status, 200, `after ${JSON.stringify(refusal)}: ${served.body.slice(0, 200)}`);
        assert.equal(served.reusedSocket, true, 'the second request went down the same connection');
      }
    } finally {
      agent.destroy();
    }
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

  /** One POST of the whole body in one write, through `agent`. */
  const post = (agent: Agent, headers: Record<string, string>) =>
    new Promise<{ status: number; headers: IncomingHttpHeaders; body: string; reusedSocket: boolean }>((resolve, reject) => {
      const request = httpRequest(
        {
          host: '127.0.0.1',
          port: h.gateway.port,
          method: 'POST',
          path: '/v1/chat/completions',
          agent,
          headers: { 'content-type': 'application/json', ...headers },
        },
        (response) => {
          let text = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => (text += chunk));
          response.on('end', () =>
            resolve({ status: response.statusCode!, headers: response.headers, body: text, reusedSocket: request.reusedSocket }),
          );
          response.on('error', reject);
        },
      );
      request.on('error', reject);
      request.end(body);
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
