// A stream still open when the gateway's shutdown grace ends (a long answer during a rolling
// deploy) ends with its family's error event — retry, the gateway is shutting down — instead of a
// connection cut without a word (found by an outside probe), and its audit record is written.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';
import { waitFor } from '../support/wait-for.js';

let server: Server;
let h: GatewayHarness;
let suppliersReached = 0;

beforeAll(async () => {
  // Content, then nothing for as long as the connection stays: an answer longer than any grace.
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      suppliersReached++;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(
        `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content: 'Thinking' }, finish_reason: null }] })}\n\n`,
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  h = await startGatewayHarness(
    [
      {
        name: 'long',
        region: 'EU',
        baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
        timeout_ms: 60_000,
        first_byte_timeout_ms: 60_000,
        models: [{ id: 'long-answer', input_usd_per_mtok: 1, output_usd_per_mtok: 2 }],
      },
    ],
    { settings: { SVC_SHUTDOWN_GRACE_MS: '300' } },
  );
});
afterAll(async () => {
  await h?.close();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
});

test('a stream open when the shutdown grace ends gets an error event saying to retry, then the end', async () => {
  const { id, secret } = await h.createKeyWithId();
  const res = await fetch(`${h.gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'long-answer', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
  });
  expect(res.status).toBe(200);
  const reading = res.text();
  await waitFor('the supplier to be answering', () => suppliersReached === 1);
  const stopping = h.gateway.stop();
  const text = await reading;
  await stopping;
  expect(text).toContain('"content":"Thinking"');
  expect(text).toContain('service_unavailable');
  expect(text).toContain('shutting down');
  expect(text).toContain('"retryable":false');
  // Its audit record says how it ended: the stop flushed the writer before it returned.
  expect(await h.database.knex('audit_log').where({ key_id: id }).first('code')).toEqual({ code: 'service_unavailable' });
});
