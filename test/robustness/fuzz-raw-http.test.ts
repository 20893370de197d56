// Fuzz suite over the raw HTTP layer (issue 13): request lines, headers and bodies no HTTP client
// would send — malformed methods, targets and versions, bad percent-encoding, invalid header names
// and values, huge headers, conflicting or lying Content-Length and Transfer-Encoding, broken
// chunks, truncated bodies — each written to a fresh socket that then half-closes. The gateway
// must close every connection (no hang), never answer 5xx, never echo a secret, and answer every
// error in the catalogue shape. Seeded and bounded: see fuzz-run.ts.
import { afterAll, beforeAll, describe, test } from 'vitest';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';
import { fuzz, fuzzCases, fuzzTimeoutMs, hostileStrings } from './fuzz-run.js';
import { catalogueShapeProblems, rawExchange } from './support.js';

/** Strings encodeURIComponent accepts (it throws on a lone surrogate). */
function encodable(s: string): boolean {
  try {
    encodeURIComponent(s);
    return true;
  } catch {
    return false;
  }
}
const printable = fc.stringMatching(/^[\x21-\x7e]{0,30}$/);
/** Bytes a header or request line must not hold, and some that are merely unusual. */
const oddText = fc.oneof(
  fc.string({ unit: 'binary-ascii', maxLength: 30 }),
  fc.constantFrom('\u0000', '\u0001', '\u007f', '\u00ff', 'é', '🚀', ' ', '\t', '\r', '\n', '\r\n', ':', '%', '%zz', '%00'),
);

describe('fuzzing the raw HTTP layer', () => {
  let h: GatewayHarness;
  let tenantKey: string;
  let secrets: string[];

  beforeAll(async () => {
    h = await startGatewayHarness();
    tenantKey = await h.createKey();
    secrets = [h.adminKey, h.pepper, tenantKey];
  });
  afterAll(async () => {
    await h?.close();
  });

  const validBody = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 8 });
  const rawCase = fc.record({
    method: fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD') },
      { weight: 1, arbitrary: fc.constantFrom('CONNECT', 'TRACE', 'PRI', 'get', 'G ET', '', 'X'.repeat(100), 'SEARCH', 'PROPFIND') },
      { weight: 1, arbitrary: oddText },
    ),
    target: fc.oneof(
      {
        weight: 6,
        arbitrary: fc.constantFrom(
          '/health',
          '/v1/models',
          '/v1/chat/completions',
          '/v1/messages',
          '/v1/embeddings',
          '/v1/manage/keys',
          '/v1/manage/keys/key_00000000000000000000',
          '/v1/manage/wallets/project:x',
        ),
      },
      {
        weight: 2,
        arbitrary: fc.constantFrom(
          '/%zz',
          '/%',
          '/v1/manage/keys/%E0%A4%A',
          '*',
          'http://gateway/health',
          '//health',
          '/health/../v1/models',
          `/v1/manage/keys/${'a'.repeat(600)}`,
          '/health?%zz=%',
          '/v1/models?a=%00',
          '',
        ),
      },
      { weight: 1, arbitrary: fc.tuple(fc.constant('/'), oddText).map(([a, b]) => a + b) },
      {
        weight: 1,
        arbitrary: fc
          .constantFrom(...hostileStrings.filter(encodable))
          .map((s) => `/v1/manage/keys?name_prefix=${encodeURIComponent(s).slice(0, 200)}`),
      },
    ),
    version: fc.oneof(
      { weight: 8, arbitrary: fc.constant('HTTP/1.1') },
      { weight: 1, arbitrary: fc.constantFrom('HTTP/1.0', 'HTTP/2.0', 'HTTP/1.1x', '', 'HTTP/0.9', 'http/1.1', 'HTTP/1.10') },
    ),
    newline: fc.oneof({ weight: 8, arbitrary: fc.constant('\r\n') }, { weight: 1, arbitrary: fc.constantFrom('\n', '\r', '\r\r\n') }),
    credential: fc.constantFrom('none', 'tenant', 'admin', 'garbage', 'x-api-key'),
    headers: fc.array(
      fc.oneof(
        {
          weight: 4,
          arbitrary: fc.tuple(
            fc.constantFrom(
              'content-type',
              'accept',
              'x-request-id',
              'anthropic-version',
              'connection',
              'expect',
              'upgrade',
              'content-encoding',
              'cookie',
            ),
            printable,
          ),
        },
        {
          weight: 2,
          arbitrary: fc.tuple(
            fc.constantFrom('content-length'),
            fc.constantFrom('0', '5', '999999', '-1', 'abc', '1 2', '0x10', '18446744073709551616', ''),
          ),
        },
        {
          weight: 2,
          arbitrary: fc.tuple(
            fc.constantFrom('transfer-encoding'),
            fc.constantFrom('chunked', 'gzip', 'chunked, chunked', 'gzip, chunked', 'identity', 'x'),
          ),
        },
        {
          weight: 1,
          arbitrary: fc.tuple(
            fc.constantFrom('connection', 'upgrade', 'expect'),
            fc.constantFrom('close', 'keep-alive', 'upgrade', 'websocket', 'h2c', '100-continue'),
          ),
        },
        { weight: 1, arbitrary: fc.tuple(oddText, oddText) },
        {
          weight: 1,
          arbitrary: fc.tuple(
            fc.constant('x-big'),
            fc.integer({ min: 1_000, max: 40_000 }).map((n) => 'a'.repeat(n)),
          ),
        },
      ),
      { maxLength: 4 },
    ),
    host: fc.oneof({ weight: 8, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
    body: fc.oneof(
      { weight: 3, arbitrary: fc.constant('') },
      { weight: 3, arbitrary: fc.constant(validBody) },
      { weight: 1, arbitrary: fc.nat(validBody.length).map((n) => validBody.slice(0, n)) },
      {
        weight: 1,
        arbitrary: fc.constantFrom(
          '5\r\nhello\r\n0\r\n\r\n',
          'zz\r\nabc\r\n0\r\n\r\n',
          '5\r\nhel',
          'ffffffffffffffff\r\nx',
          '3;ext=1\r\nabc\r\n0\r\n\r\n',
        ),
      },
      { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 300 }) },
    ),
    /** Content-Length: the body's true length, or none (the headers above may add their own). */
    declareLength: fc.boolean(),
    /** Send the request in two pieces, split here. */
    split: fc.nat(),
  });

  const cases = fuzzCases(1_000, 0.4);
  test(
    `${cases} raw requests: every connection closed, no 5xx, no secret, every error in the catalogue shape`,
    async () => {
      await fuzz('raw HTTP fuzz', rawCase, cases, async (c) => {
        const nl = c.newline;
        const lines = [`${c.method} ${c.target} ${c.version}`.trimEnd()];
        if (c.host) lines.push('host: gateway');
        const key = { tenant: tenantKey, admin: h.adminKey, garbage: 'svc-sk-garbage', none: undefined, 'x-api-key': undefined }[
          c.credential
        ];
        if (key) lines.push(`authorization: Bearer ${key}`);
        if (c.credential === 'x-api-key') lines.push(`x-api-key: ${tenantKey}`);
        for (const [name, value] of c.headers) lines.push(`${name}: ${value}`);
        if (c.declareLength) lines.push(`content-length: ${Buffer.byteLength(c.body)}`);
        const request = Buffer.from(`${lines.join(nl)}${nl}${nl}${c.body}`, 'utf8');
        const cut = c.split % (request.length + 1);
        const exchange = await rawExchange(
          h.gateway.port,
          [request.subarray(0, cut), request.subarray(cut)].filter((b) => b.length > 0),
          { end: true, waitMs: 20_000 },
        );
        const context = `${JSON.stringify(request.toString('latin1').slice(0, 300))} → ${exchange.received.slice(0, 300)}`;
        assert.equal(exchange.closedByServer, true, `the connection was still open after 20 s: ${context}`);
        for (const secret of secrets) assert.ok(!exchange.received.includes(secret), `a secret in the answer: ${context}`);
        if (exchange.status === undefined) return;
        assert.ok(exchange.status < 500, `5xx: ${context}`);
        if (exchange.status >= 400 && c.method !== 'HEAD') {
          assert.deepEqual(catalogueShapeProblems(exchange.status, exchange.body, exchange.headers['content-type']), [], context);
        }
      });
    },
    fuzzTimeoutMs(cases),
  );

  test('the gateway still serves after the fuzzing', async () => {
    const health = await fetch(`${h.gateway.url}/health`);
    assert.equal(health.status, 200);
  });
});
