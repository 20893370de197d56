// Finding 8 of issue 13: errors raised by the HTTP layer itself skipped the documented body —
// `%zz` in a path was fastify's FST_ERR_BAD_URL, a path parameter over 100 characters a bare 414
// before authentication, and malformed HTTP, oversized headers (431) and slow headers (408) were
// Node's or fastify's own bodies. Every answer is now in the catalogue shape.
import { afterAll, beforeAll, describe, test } from 'vitest';
import assert from 'node:assert/strict';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';
import { assertCatalogueError, catalogueShapeProblems, rawExchange, send } from './support.js';

describe('errors of the HTTP layer', () => {
  let h: GatewayHarness;

  beforeAll(async () => {
    h = await startGatewayHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  const admin = (path: string) => send(h.gateway.url, path, { key: h.adminKey });

  test('bad percent-encoding in the path is a catalogue 400', async () => {
    const badPath = await admin('/v1/manage/keys/%zz');
    assertCatalogueError(badPath, 400, 'invalid_request');
    assertCatalogueError(await admin('/v1/manage/wallets/%E0%A4%A'), 400, 'invalid_request');
    // The request id is in the header as on every other answer, not only in the body.
    assert.equal(badPath.headers.get('x-request-id'), (JSON.parse(badPath.text) as { error: { request_id: string } }).error.request_id);
  });

  test('path parameters: a payer id of 140 characters is routed; one over the limit is a catalogue 414', async () => {
    const payer = `project:${'p'.repeat(128)}`;
    const wallet = await admin(`/v1/manage/wallets/${payer}`);
    assert.notEqual(wallet.status, 414, wallet.text);
    assert.ok(wallet.status < 500, wallet.text);
    const tooLong = await admin(`/v1/manage/keys/${'k'.repeat(600)}`);
    assertCatalogueError(tooLong, 414, 'request_too_large');
    assert.match(tooLong.headers.get('x-request-id') ?? '', /\S/);
  });

  const rawCases: { name: string; request: string; status: number; code: string }[] = [
    { name: 'a malformed request line', request: 'GARBAGE\r\n\r\n', status: 400, code: 'invalid_request' },
    {
      name: 'a bad header name',
      request: 'GET /health HTTP/1.1\r\nhost: x\r\nbad header: 1\r\n\r\n',
      status: 400,
      code: 'invalid_request',
    },
    {
      name: 'a control character in a header value',
      request: 'GET /health HTTP/1.1\r\nhost: x\r\nx-a: a\u0001b\r\n\r\n',
      status: 400,
      code: 'invalid_request',
    },
    {
      name: 'headers over the size limit',
      request: `GET /health HTTP/1.1\r\nhost: x\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`,
      status: 431,
      code: 'request_too_large',
    },
    {
      name: 'a request line over the size limit',
      request: `GET /${'a'.repeat(20_000)} HTTP/1.1\r\nhost: x\r\n\r\n`,
      status: 431,
      code: 'request_too_large',
    },
    {
      name: 'an invalid Content-Length',
      request: 'POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: abc\r\n\r\n',
      status: 400,
      code: 'invalid_request',
    },
    {
      name: 'both Content-Length and chunked',
      request: 'POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: 3\r\ntransfer-encoding: chunked\r\n\r\nabc',
      status: 400,
      code: 'invalid_request',
    },
    {
      name: 'a broken chunk size',
      request: 'POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n',
      status: 400,
      code: 'invalid_request',
    },
  ];
  for (const c of rawCases) {
    test(`${c.name} is a catalogue ${c.status}`, async () => {
      const exchange = await rawExchange(h.gateway.port, [c.request]);
      assert.equal(exchange.status, c.status, exchange.received.slice(0, 300));
      assert.deepEqual(catalogueShapeProblems(c.status, exchange.body, exchange.headers['content-type']), []);
      assert.equal((JSON.parse(exchange.body) as { error: { code: string } }).error.code, c.code);
      assert.match(exchange.headers['x-request-id'] ?? '', /^req_[0-9a-f]{32}$/);
      assert.equal(exchange.closedByServer, true);
    });
  }
});
