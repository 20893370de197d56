// A supplier stream the gateway must not hold whole (found by an outside probe): an SSE line that
// never ends was buffered without limit (three such streams took the process out of memory), and a
// client that does not read made the gateway read the supplier's whole stream into memory. One
// event is held to the supplier answer bound, and a client that does not read holds the supplier
// back instead. Also: a stream to an HTTP/1.0 client (nginx's default toward upstreams) carries no
// trailers, which Node refuses there, and honours the client's `Connection: close`.
import { createServer, type Server, type ServerResponse } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';
import { waitFor } from '../support/wait-for.js';
import { rawRequest } from '../support/raw-request.js';

let server: Server;
let h: GatewayHarness;
let key: string;
/** The endless stream's progress at the supplier: bytes it wrote, whether it waits for its socket, whether it finished. */
const endless = { written: 0, waiting: false, waitingSince: 0, finished: false };

const chunk = (content: string) =>
  `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;

/** Writes `total` bytes of content events as a well-behaved server does: waiting for its socket to drain. */
async function writeWithBackpressure(res: ServerResponse, total: number): Promise<void> {
  const piece = chunk('x'.repeat(64 * 1024));
  while (endless.written < total && !res.destroyed) {
    endless.written += piece.length;
    if (!res.write(piece)) {
      endless.waiting = true;
      endless.waitingSince = Date.now();
      await new Promise((resolve) => {
        res.once('drain', resolve);
        res.once('close', resolve);
      });
      endless.waiting = false;
    }
  }
  endless.finished = endless.written >= total;
  res.end('data: [DONE]\n\n');
}

/** A supplier ignoring the output limit: content events (1 KiB of text each) for as long as its connection lives. */
const forever = { events: 0, closed: false };
async function generateForever(res: ServerResponse): Promise<void> {
  // One wake-up for whichever comes first, drain or close (a listener per wait would pile up on close).
  let wake: (() => void) | undefined;
  res.on('drain', () => wake?.());
  res.once('close', () => {
    forever.closed = true;
    wake?.();
  });
  const piece = chunk('tok '.repeat(256));
  while (!res.destroyed) {
    forever.events += 1;
    if (!res.write(piece)) await new Promise<void>((resolve) => (wake = resolve));
  }
}

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const { model } = JSON.parse(body) as { model: string };
      if (model === 'native-partial') {
        // A Responses stream: its opening, a delta, then half an event and the end of the body.
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const event = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
        res.write(event('response.created', { sequence_number: 0, response: { id: 'resp_1', status: 'in_progress', output: [] } }));
        res.write(
          event('response.output_text.delta', { sequence_number: 1, item_id: 'm1', output_index: 0, content_index: 0, delta: 'Hello' }),
        );
        return void res.end('event: response.output_text.delta\ndata: {"type":"response.output_text.delta","partial');
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (model === 'long-line') {
        // Content first, then one line that never ends: 4 MiB, past the 1 MiB bound.
        res.write(chunk('Hello'));
        res.write(`data: {"choices":[{"index":0,"delta":{"content":"${'a'.repeat(4 * 1024 * 1024)}`);
        return;
      }
      if (model === 'endless') return void writeWithBackpressure(res, 256 * 1024 * 1024);
      if (model === 'forever') return void generateForever(res);
      // Content, then silence: the supplier's between-chunk timeout cuts it mid-answer.
      if (model === 'stall') return void res.write(chunk('Hello'));
      res.write(chunk('Hello'));
      res.write(
        `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n`,
      );
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  h = await startGatewayHarness(
    [
      {
        name: 'streams',
        region: 'EU',
        baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
        models: ['long-line', 'endless', 'plain', 'forever'].map((id) => ({ id, input_usd_per_mtok: 1, output_usd_per_mtok: 2 })),
      },
      {
        name: 'responses',
        region: 'EU',
        protocol: 'openai-responses',
        baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
        models: [{ id: 'native-partial', input_usd_per_mtok: 1, output_usd_per_mtok: 2 }],
      },
      {
        name: 'stalling',
        region: 'EU',
        baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
        first_byte_timeout_ms: 300,
        models: [{ id: 'stall', input_usd_per_mtok: 1, output_usd_per_mtok: 2 }],
      },
    ],
    { settings: { SVC_SUPPLIER_ANSWER_MAX_BYTES: String(1024 * 1024) } },
  );
  key = await h.createKey();
});
afterAll(async () => {
  await h?.close();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
});

const streamBody = (model: string) => JSON.stringify({ model, stream: true, messages: [{ role: 'user', content: 'hi' }] });

const raw = (request: string) => rawRequest(h.gateway.url, request);

const post = (model: string, version: string, extraHeaders = '') => {
  const body = streamBody(model);
  return `POST /v1/chat/completions ${version}\r\nHost: gw\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extraHeaders}\r\n${body}`;
};

describe('streams the gateway does not hold whole', () => {
  test('one event past the supplier answer bound stops the stream with an error event, not the process', async () => {
    const res = await fetch(`${h.gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: streamBody('long-line'),
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain('"content":"Hello"');
    expect(text).toContain('invalid_backend_response');
    expect(text).toContain('a stream event of more than');
    // After output, a failure is never advertised as safe to retry (the answer so far was generated and charged).
    expect(text).toContain('"retryable":false');
    expect(text).not.toContain('"retryable":true');
  });

  test('a supplier generating far past max_tokens is ended with an error event, not relayed until the timeout', async () => {
    const own = await h.createKeyWithId();
    const res = await fetch(`${h.gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${own.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'forever', stream: true, max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain('"content":"tok tok ');
    expect(text).toContain('invalid_backend_response');
    expect(text).toContain('kept generating past the output limit of 5 tokens');
    // Ended after a bounded answer (64 Ki characters of text for a small limit), and the supplier let go.
    expect(text.length).toBeLessThan(4 * 1024 * 1024);
    await waitFor('the supplier connection to close', () => forever.closed);
    // Charged the limit, once: the audit row of a 200 whose stream ended in the error.
    await waitFor('the audit row', async () => (await h.auditOf(own.id)).length >= 1);
    const [row] = await h.auditOf(own.id);
    expect(row).toMatchObject({ model: 'forever', status: 200, output_tokens: 5 });
  });

  test('a supplier that stalls mid-answer is provider_timeout in the stream, not advertised as safe to retry', async () => {
    const res = await fetch(`${h.gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: streamBody('stall'),
    });
    const text = await res.text();
    expect(text).toContain('"content":"Hello"');
    expect(text).toContain('provider_timeout');
    // Before the first byte a timeout is safe to retry; after output it is not: the answer so far was generated and charged.
    expect(text).toContain('"retryable":false');
  });

  test('the native lane: a supplier breaking off mid-event leaves no half event before the error event', async () => {
    const res = await fetch(`${h.gateway.url}/v1/native/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'native-partial', stream: true, input: [{ role: 'user', content: 'hi' }] }),
    });
    const text = await res.text();
    expect(text).toContain('"delta":"Hello"');
    expect(text).not.toContain('"partial');
    // The error event follows a whole event, so an SSE parser reads it as its own event.
    expect(text).toMatch(/\n\nevent: error\ndata: \{"type":"error"/);
  });

  test('a client that does not read holds the supplier back instead of the gateway reading its whole stream', async () => {
    const { hostname, port } = new URL(h.gateway.url);
    const socket = connect(Number(port), hostname, () => socket.write(post('endless', 'HTTP/1.1')));
    socket.pause(); // never reads
    try {
      // The supplier (writing 256 MiB as fast as it is taken) is made to wait, and keeps waiting.
      await waitFor(
        'the supplier to wait for the gateway',
        () => endless.finished || (endless.waiting && Date.now() - endless.waitingSince > 1_000),
        30_000,
      );
      expect(endless.finished).toBe(false);
      expect(endless.written).toBeLessThan(64 * 1024 * 1024);
    } finally {
      socket.destroy();
    }
  });

  test('an HTTP/1.0 client gets the whole stream without trailers, closed at its end', async () => {
    const answer = await raw(post('plain', 'HTTP/1.0'));
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer.toLowerCase()).not.toContain('trailer:');
    expect(answer).not.toContain('internal_error');
    expect(answer).toContain('"content":"Hello"');
    expect(answer).toContain('data: [DONE]');
    expect(answer).toContain(': svc-totals ');
  });

  test("a client's Connection: close is honoured on a stream", async () => {
    const answer = await raw(post('plain', 'HTTP/1.1', 'Connection: close\r\n'));
    expect(answer.toLowerCase()).toContain('connection: close');
    expect(answer).toContain('data: [DONE]');
  });
});
