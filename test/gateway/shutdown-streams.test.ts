// A stream still open when the gateway's shutdown grace ends (a long answer during a rolling
// deploy) ends with its family's error event — retry, the gateway is shutting down — instead of a
// connection cut without a word (found by an outside probe), and its audit record is written.
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';
import { waitFor } from '../support/wait-for.js';

let server: Server;
let h: GatewayHarness;
let suppliersReached = 0;

beforeAll(async () => {
  // Content, then nothing for as long as the connection stays: an answer longer than any grace.
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      suppliersReached++;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = (content: string) =>
        `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;
      res.write(chunk('Thinking'));
      if (!body.includes('flood')) return;
      // As much as the gateway takes, for a client that does not read.
      const more = () => {
        while (!res.destroyed && res.write(chunk('x'.repeat(64 * 1024))));
        if (!res.destroyed) res.once('drain', more);
      };
      more();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  h = await startLongAnswerGateway();
});
/** A gateway whose one supplier gives long answers, with a short shutdown grace. */
function startLongAnswerGateway(): Promise<GatewayHarness> {
  return startGatewayHarness(
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
}

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

test('a client that stopped reading when the grace ends still has its audit record written before the gateway stops', async () => {
  const again = await startLongAnswerGateway();
  try {
    const { id, secret } = await again.createKeyWithId();
    const body = JSON.stringify({ model: 'long-answer', stream: true, messages: [{ role: 'user', content: 'flood' }] });
    const { hostname, port } = new URL(again.gateway.url);
    const reached = suppliersReached;
    const socket = connect(Number(port), hostname, () =>
      socket.write(
        `POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${secret}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      ),
    );
    socket.on('error', () => undefined);
    socket.pause(); // never reads
    await waitFor('the supplier to be answering', () => suppliersReached > reached);
    await again.gateway.stop();
    socket.destroy();
    expect(await again.database.knex('audit_log').where({ key_id: id }).first('code')).toBeDefined();
  } finally {
    await again.close();
  }
});
