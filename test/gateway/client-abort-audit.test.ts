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

// A client that leaves right after the stream's error event (the SDKs close the connection on it):
// the supplier broke the stream, the gateway decided and sent that answer, and only the totals and
// the end were still to come. The audit record blamed the client (499) when the connection closed
// before the record was made (outside probe: 14 of 60 SDK streams on the Responses bridge).
describe('a client that leaves on the stream error event', () => {
  let h: GatewayHarness;
  let server: Server;
  const logs = captureLogs();
  beforeAll(async () => {
    // Much text and no usage, then the connection cut: the gateway counts the text (a wait) before
    // the record is made, time enough for the client's close to arrive first.
    let seed = 7;
    const word = () => String.fromCharCode(97 + ((seed = (seed * 1_103_515_245 + 12_345) & 0x7fffffff) % 26)).repeat(1 + (seed % 7));
    const content = Array.from({ length: 60_000 }, word).join(' ');
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const choices = [{ index: 0, delta: { role: 'assistant', content }, finish_reason: null }];
        res.write(`data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'cut', choices })}\n\n`, () =>
          res.destroy(),
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    h = await startGatewayHarness(
      [
        {
          name: 'cutting',
          region: 'EU',
          baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
          models: [{ id: 'cut', input_usd_per_mtok: 1, output_usd_per_mtok: 2 }],
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

  test('is recorded as the answer it got — 200 with the attempt stream_interrupted — in the audit record and the request line', async () => {
    const { id, secret } = await h.createKeyWithId();
    const gone = new AbortController();
    const answer = await fetch(`${h.gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'cut', messages: [{ role: 'user', content: 'tell me a long story' }], stream: true }),
      signal: gone.signal,
    });
    assert.equal(answer.status, 200);
    const reader = answer.body!.getReader();
    let text = '';
    while (!text.includes('stream_interrupted')) {
      const next = await reader.read();
      assert.ok(!next.done, 'the stream carries its error event');
      text += new TextDecoder().decode(next.value);
    }
    gone.abort();
    await waitFor('the stream in the audit log', async () => (await h.auditOf(id)).length === 1);
    const [record] = await h.auditOf(id);
    await waitFor('its request line', () => logs.lines().some((l) => l.msg === 'request' && l.request_id === record!.request_id));
    const line = logs.lines().find((l) => l.msg === 'request' && l.request_id === record!.request_id);
    assert.deepEqual({ status: record!.status, code: record!.code }, { status: 200, code: 'stream_interrupted' });
    assert.deepEqual(
      record!.attempts.map((a) => ({ outcome: a.outcome, status: a.status, code: a.code })),
      [{ outcome: 'failed', status: 502, code: 'stream_interrupted' }],
    );
    assert.deepEqual({ status: line?.status, code: line?.code }, { status: 200, code: 'stream_interrupted' });
    assert.ok(record!.output_tokens > 0, 'the streamed words are charged');
  });
});
