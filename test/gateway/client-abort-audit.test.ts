// A client that leaves before its answer (here after 500 ms, the supplier taking 2 s) is a 499
// "client closed request" wherever the request is recorded: the request line and the metrics said
// so, while the audit record called it a client error (400 request_rejected).
import { afterAll, beforeAll, describe, test } from 'vitest';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';
import { waitFor } from '../support/wait-for.js';
import { captureLogs } from '../observability/log-capture.js';

describe('a client that aborts before the answer', () => {
  let h: GatewayHarness;
  const logs = captureLogs();
  beforeAll(async () => {
    h = await startGatewayHarness([{ name: 'sim-a', region: 'EU' }], { logger: logs.logger });
    h.simulators.get('sim-a')!.setFaults({ latencyMs: 2000 });
  });
  afterAll(async () => {
    await h?.close();
  });

  for (const stream of [false, true]) {
    test(`${stream ? 'streaming' : 'JSON'}: the audit record says 499 client_closed_request, as the request line does`, async () => {
      const { id, secret } = await h.createKeyWithId();
      const gone = new AbortController();
      const pending = fetch(`${h.gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'never mind' }], max_tokens: 20, stream }),
        signal: gone.signal,
      });
      setTimeout(() => gone.abort(), 500);
      await assert.rejects(pending, 'the client gave up');
      await waitFor('the abandoned request in the audit log', async () => (await h.auditOf(id)).length === 1);
      const [record] = await h.auditOf(id);
      const line = logs.lines().find((l) => l.msg === 'request' && l.request_id === record!.request_id);
      assert.equal(line?.status, 499, 'the request line says 499');
      assert.deepEqual({ status: record!.status, code: record!.code }, { status: 499, code: 'client_closed_request' });
      assert.equal(line.code, 'client_closed_request', 'the request line names it the same way');
      // The supplier attempt was cancelled for the client, not refused by the supplier (it read 400 request_rejected).
      assert.deepEqual(
        record!.attempts.map((a) => ({ outcome: a.outcome, status: a.status, code: a.code })),
        [{ outcome: 'failed', status: 499, code: 'client_closed_request' }],
      );
    });
  }
});

// A client that leaves mid-stream, after the 200 and some content: the supplier did not fail, the
// client left. The audit said 200 with code stream_interrupted and the attempt failed 502, while
// the request line and the metrics said 499.
describe('a client that leaves mid-stream', () => {
  let h: GatewayHarness;
  let server: Server;
  const logs = captureLogs();
  beforeAll(async () => {
    // A stream that sends some content, then keeps the connection open without ending.
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const chunk = { id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'slow', choices: [] as object[] };
        chunk.choices = [{ index: 0, delta: { role: 'assistant', content: 'The first words of a long answer' }, finish_reason: null }];
        res.write(`data: ${JSON.stringify(chunk)}\n\n`);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    h = await startGatewayHarness(
      [
        {
          name: 'slow-stream',
          region: 'EU',
          timeout_ms: 60_000,
          first_byte_timeout_ms: 60_000,
          baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
          models: [{ id: 'slow', input_usd_per_mtok: 1, output_usd_per_mtok: 2 }],
        },
      ],
      { logger: logs.logger },
    );
  });
  afterAll(async () => {
    await h?.close();
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
  });

  test('the audit record says 499 client_closed_request as the request line does, the attempt cancelled for the client, the streamed text charged', async () => {
    const { id, secret } = await h.createKeyWithId();
    const gone = new AbortController();
    const answer = await fetch(`${h.gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'slow', messages: [{ role: 'user', content: 'tell me a long story' }], stream: true }),
      signal: gone.signal,
    });
    assert.equal(answer.status, 200);
    const reader = answer.body!.getReader();
    let text = '';
    while (!text.includes('The first words')) {
      const next = await reader.read();
      assert.ok(!next.done, 'the stream carries the first words');
      text += new TextDecoder().decode(next.value);
    }
    gone.abort();
    await waitFor('the abandoned stream in the audit log', async () => (await h.auditOf(id)).length === 1);
    const [record] = await h.auditOf(id);
    await waitFor('its request line', () => logs.lines().some((l) => l.msg === 'request' && l.request_id === record!.request_id));
    const line = logs.lines().find((l) => l.msg === 'request' && l.request_id === record!.request_id);
    assert.equal(line?.status, 499, 'the request line says 499');
    assert.deepEqual({ status: record!.status, code: record!.code }, { status: 499, code: 'client_closed_request' });
    assert.deepEqual(
      record!.attempts.map((a) => ({ outcome: a.outcome, status: a.status, code: a.code })),
      [{ outcome: 'failed', status: 499, code: 'client_closed_request' }],
    );
    // What was streamed before the client left is charged, once.
    assert.ok(record!.output_tokens > 0, 'the streamed words are charged');
  });
});
