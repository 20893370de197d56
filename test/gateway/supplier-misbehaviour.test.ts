// Answers from a supplier that are not answers (found by an outside-style probe): a redirect was
// relayed to the client as a 302 with no failover, and a stream of `[DONE]` alone was an empty 200.
// Both are the supplier's failure now: 502, and the next supplier answers.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';

let server: Server;
let h: GatewayHarness;
let behaviour:
  | 'redirect'
  | 'done-only'
  | 'long-code'
  | 'stall'
  | 'error-early'
  | 'reset-after-done'
  | 'tools-no-finish'
  | 'huge'
  | 'json-for-stream'
  | 'native-json'
  | 'native-bare-cr'
  | 'native-cut-early'
  | 'native-failed-early'
  | 'huge-declared' = 'redirect';

/** One OpenAI stream chunk of model `fo` as an SSE frame. */
const chunkFrame = (delta: object, finish_reason: string | null = null) =>
  `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'fo', choices: [{ index: 0, delta, finish_reason }] })}\n\n`;

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (behaviour === 'redirect') {
        res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' });
        return res.end();
      }
      if (behaviour === 'stall') {
        // One chunk, then nothing: the connection stays open until the gateway gives up on it.
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        return res.write(chunkFrame({ content: 'Hel' }));
      }
      if (behaviour === 'error-early') {
        // Overloaded right after the stream opened: the role chunk, then the error, no content.
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const error = { error: { code: 'overloaded', type: 'server_error', message: 'Overloaded' } };
        return res.end(`${chunkFrame({ role: 'assistant', content: '' })}data: ${JSON.stringify(error)}\n\n`);
      }
      if (behaviour === 'reset-after-done') {
        // A whole answer without usage, then the connection is reset instead of ended cleanly.
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(`${chunkFrame({ role: 'assistant', content: 'Whole answer' })}${chunkFrame({}, 'stop')}data: [DONE]\n\n`);
        return void setTimeout(() => res.socket?.destroy(), 20);
      }
      if (behaviour === 'json-for-stream') {
        // stream: true ignored: one whole completion as JSON.
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(
          JSON.stringify({
            id: 'c1',
            object: 'chat.completion',
            created: 1,
            model: 'fo',
            choices: [{ index: 0, message: { role: 'assistant', content: 'whole' }, finish_reason: 'stop' }],
          }),
        );
      }
      if (behaviour === 'huge') {
        // A 3 MB answer (the gateway here reads at most 1 MiB of one), sent in pieces with no length declared.
        res.writeHead(200, { 'content-type': 'application/json' });
        const content = 'x'.repeat(3_000_000);
        const answer = JSON.stringify({
          id: 'c1',
          object: 'chat.completion',
          created: 1,
          model: 'fo',
          choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
        });
        for (let at = 0; at < answer.length; at += 256 * 1024) res.write(answer.slice(at, at + 256 * 1024));
        return res.end();
      }
      if (behaviour === 'huge-declared') {
        // A length over what the gateway reads, declared up front; the beginning sent, the rest held.
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(5_000_000) });
        return res.write('{"id":"c1","object":"chat.completion","choices":[');
      }
      if (behaviour === 'tools-no-finish') {
        // A tool call, then [DONE] with no finish_reason anywhere (some compatible suppliers do this).
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const call = { index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } };
        return res.end(`${chunkFrame({ role: 'assistant', tool_calls: [call] })}data: [DONE]\n\n`);
      }
      if (behaviour === 'native-json') {
        // The native lane's stream request answered with one Responses document.
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(JSON.stringify({ id: 'resp_1', object: 'response', status: 'completed', output: [] }));
      }
      if (behaviour === 'native-bare-cr') {
        // A whole Responses stream whose lines end with a bare CR, the last event's too (the SSE format allows it).
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const event = (name: string, data: object) => `event: ${name}\rdata: ${JSON.stringify({ type: name, ...data })}\r\r`;
        const usage = { input_tokens: 7, output_tokens: 3, total_tokens: 10 };
        return res.end(
          event('response.created', { response: { id: 'resp_1', object: 'response', status: 'in_progress', output: [] } }) +
            event('response.output_text.delta', { item_id: 'm1', output_index: 0, content_index: 0, delta: 'Whole' }) +
            event('response.completed', { response: { id: 'resp_1', object: 'response', status: 'completed', output: [], usage } }),
        );
      }
      if (behaviour === 'native-failed-early') {
        // The opening events, then the supplier's own failure, before anything was generated.
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const response = { id: 'resp_1', object: 'response', status: 'in_progress', output: [] };
        const failed = { ...response, status: 'failed', error: { code: 'server_error', message: 'The model crashed' } };
        return res.end(
          `event: response.created\ndata: ${JSON.stringify({ type: 'response.created', response })}\n\n` +
            `event: response.failed\ndata: ${JSON.stringify({ type: 'response.failed', response: failed })}\n\n`,
        );
      }
      if (behaviour === 'native-cut-early') {
        // The opening events, then the connection dropped: nothing was generated.
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const response = { id: 'resp_1', object: 'response', status: 'in_progress', output: [] };
        res.write(`event: response.created\ndata: ${JSON.stringify({ type: 'response.created', response })}\n\n`);
        res.write(`event: response.in_progress\ndata: ${JSON.stringify({ type: 'response.in_progress', response })}\n\n`);
        return setTimeout(() => res.destroy(), 20);
      }
      if (behaviour === 'done-only') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        return res.end('data: [DONE]\n\n');
      }
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 'x'.repeat(5_000), message: 'refused', type: 'invalid_request_error' } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const models = [{ id: 'fo', input_usd_per_mtok: 1, output_usd_per_mtok: 2 }];
  h = await startGatewayHarness(
    [
      {
        name: 'misbehaving',
        region: 'EU',
        priority: 1,
        first_byte_timeout_ms: 500,
        baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
        models,
      },
      { name: 'sim-good', region: 'EU', priority: 2, models },
      // The same server under a name of its own, for a model nobody else serves: its health is its own.
      {
        name: 'resetting',
        region: 'EU',
        baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
        models: [{ id: 'whole', input_usd_per_mtok: 1, output_usd_per_mtok: 2 }],
      },
      // The same server before the simulator for a model of their own: this supplier's health is its own.
      {
        name: 'declaring',
        region: 'EU',
        priority: 1,
        baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
        models: [{ id: 'big', input_usd_per_mtok: 1, output_usd_per_mtok: 2 }],
      },
      { name: 'sim-big', region: 'EU', priority: 2, models: [{ id: 'big', input_usd_per_mtok: 1, output_usd_per_mtok: 2 }] },
      // The native Responses lane: the same server first, the simulator second.
      {
        name: 'misbehaving-responses',
        region: 'EU',
        priority: 1,
        protocol: 'openai-responses',
        baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
        models: [{ id: 'ro', input_usd_per_mtok: 1, output_usd_per_mtok: 2 }],
      },
      {
        name: 'sim-responses',
        region: 'EU',
        priority: 2,
        protocol: 'openai-responses',
        models: [{ id: 'ro', input_usd_per_mtok: 1, output_usd_per_mtok: 2 }],
      },
    ],
    { settings: { SVC_SUPPLIER_ANSWER_MAX_BYTES: String(1024 * 1024) } },
  );
});
afterAll(async () => {
  await h?.close();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
});

/** A streamed chat for model `fo` through a new key, as the OpenAI SDK opens it. */
async function openStream() {
  const secret = await h.createKey();
  return new OpenAI({ baseURL: `${h.gateway.url}/v1`, apiKey: secret, maxRetries: 0 }).chat.completions.create({
    model: 'fo',
    stream: true,
    messages: [{ role: 'user', content: 'hi' }],
  });
}

describe('a supplier answering with something that is not an answer', () => {
  test('a redirect is not followed nor relayed: the next supplier answers', async () => {
    behaviour = 'redirect';
    const secret = await h.createKey();
    const { data, response } = await new OpenAI({ baseURL: `${h.gateway.url}/v1`, apiKey: secret, maxRetries: 0 }).chat.completions
      .create({ model: 'fo', messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    expect(data.choices[0]?.message.content).toBeTruthy();
    expect(response.headers.get('x-svc-supplier')).toBe('sim-good');
    expect(response.headers.get('x-svc-failover')).toBe('true');
    expect(response.headers.get('location')).toBeNull();
  });

  test('a stream of [DONE] alone is empty_stream: the next supplier streams the answer', async () => {
    behaviour = 'done-only';
    const stream = await openStream();
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text.length).toBeGreaterThan(0);
  });

  test("a supplier's 5,000-character error code is cut to a code's length", async () => {
    behaviour = 'long-code';
    const secret = await h.createKey();
    const error = await new OpenAI({ baseURL: `${h.gateway.url}/v1`, apiKey: secret, maxRetries: 0 }).chat.completions
      .create({ model: 'fo', messages: [{ role: 'user', content: 'hi' }] })
      .then(
        () => undefined,
        (e: unknown) => e as InstanceType<typeof OpenAI.APIError>,
      );
    expect(error?.status).toBe(400);
    expect(String(error?.code).length).toBeLessThanOrEqual(100);
    expect(error?.message.length).toBeLessThan(1_200);
  });

  test('a stream that stalls mid-way past the first-byte timeout ends in an in-stream provider_timeout, not a clean end', async () => {
    behaviour = 'stall';
    const stream = await openStream();
    let text = '';
    const error = await (async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    })().then(
      () => undefined,
      (e: unknown) => e as InstanceType<typeof OpenAI.APIError>,
    );
    expect(text).toBe('Hel');
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(error?.code).toBe('provider_timeout');
  });

  test("a stream that reports an error before any content fails over: the client gets the next supplier's answer, not a 200 with an error", async () => {
    behaviour = 'error-early';
    const secret = await h.createKey();
    const { data: stream, response } = await new OpenAI({ baseURL: `${h.gateway.url}/v1`, apiKey: secret, maxRetries: 0 }).chat.completions
      .create({ model: 'fo', stream: true, messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    expect(response.headers.get('x-svc-supplier')).toBe('sim-good');
    expect(response.headers.get('x-svc-failover')).toBe('true');
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text.length).toBeGreaterThan(0);
  });

  test('a connection reset once the answer is whole loses nothing: both SDKs read the answer and its usage', async () => {
    behaviour = 'reset-after-done';
    const secret = await h.createKey();
    const openai = new OpenAI({ baseURL: `${h.gateway.url}/v1`, apiKey: secret, maxRetries: 0 });
    const stream = await openai.chat.completions.create({
      model: 'whole',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'hi' }],
    });
    let text = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      usage = chunk.usage ?? usage;
    }
    expect(text).toBe('Whole answer');
    expect(usage?.completion_tokens).toBeGreaterThan(0);
    const message = await new Anthropic({ baseURL: h.gateway.url, apiKey: secret, maxRetries: 0 }).messages
      .stream({ model: 'whole', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] })
      .finalMessage();
    expect(message.content[0]).toMatchObject({ type: 'text', text: 'Whole answer' });
    expect(message.stop_reason).toBe('end_turn');
    expect(message.usage.output_tokens).toBeGreaterThan(0);
  });

  test('a tool call streamed without a finish_reason ends the Anthropic turn as tool_use, so agent loops run the tool', async () => {
    behaviour = 'tools-no-finish';
    const secret = await h.createKey();
    const message = await new Anthropic({ baseURL: h.gateway.url, apiKey: secret, maxRetries: 0 }).messages
      .stream({
        model: 'whole',
        max_tokens: 50,
        tools: [{ name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }],
        messages: [{ role: 'user', content: 'weather in Paris?' }],
      })
      .finalMessage();
    expect(message.content[0]).toMatchObject({ type: 'tool_use', name: 'get_weather', input: { city: 'Paris' } });
    expect(message.stop_reason).toBe('tool_use');
  });

  test("an answer larger than the gateway reads is the supplier's failure: the next supplier answers", async () => {
    behaviour = 'huge';
    const secret = await h.createKey();
    const { data, response } = await new OpenAI({ baseURL: `${h.gateway.url}/v1`, apiKey: secret, maxRetries: 0 }).chat.completions
      .create({ model: 'fo', messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    expect(response.headers.get('x-svc-supplier')).toBe('sim-good');
    expect(response.headers.get('x-svc-failover')).toBe('true');
    expect(data.choices[0]?.message.content?.length).toBeLessThan(100_000);
  });

  test('an answer declaring a length over what the gateway reads is let go of unread: the next supplier answers, the gateway lives on', async () => {
    behaviour = 'huge-declared';
    const secret = await h.createKey();
    const client = new OpenAI({ baseURL: `${h.gateway.url}/v1`, apiKey: secret, maxRetries: 0 });
    // Twice (below the three failures that open a supplier's circuit), with different openings (a
    // conversation's opening pins the supplier that answered it): both calls try it first.
    for (let i = 0; i < 2; i++) {
      const { data, response } = await client.chat.completions
        .create({ model: 'big', messages: [{ role: 'user', content: `hi ${i}` }] })
        .withResponse();
      expect(response.headers.get('x-svc-supplier')).toBe('sim-big');
      expect(response.headers.get('x-svc-failover')).toBe('true');
      expect(data.choices[0]?.message.content).toBeTruthy();
    }
  });

  test('a JSON document answering a stream request is not a stream: the next supplier streams the answer', async () => {
    behaviour = 'json-for-stream';
    const secret = await h.createKey();
    const { data: stream, response } = await new OpenAI({ baseURL: `${h.gateway.url}/v1`, apiKey: secret, maxRetries: 0 }).chat.completions
      .create({ model: 'fo', stream: true, messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    expect(response.headers.get('x-svc-supplier')).toBe('sim-good');
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text.length).toBeGreaterThan(0);
  });
});

describe('the native Responses lane, whose bytes pass through untouched', () => {
  /** A native stream request for model `ro`, read whole: status, headers, body. */
  async function nativeStream() {
    const secret = await h.createKey();
    const response = await fetch(`${h.gateway.url}/v1/native/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'ro', stream: true, input: [{ role: 'user', content: 'hi' }] }),
    });
    return { response, text: await response.text() };
  }

  /** The native stream answered whole by the simulator after a failover; its text. */
  async function expectServedByTheNextSupplier(): Promise<string> {
    const { response, text } = await nativeStream();
    expect(response.status).toBe(200);
    expect(response.headers.get('x-svc-supplier')).toBe('sim-responses');
    expect(response.headers.get('x-svc-failover')).toBe('true');
    expect(text).toContain('event: response.completed');
    return text;
  }

  // First: the tests after it fail this supplier three times, which opens its circuit.
  test('a last event ended by a bare CR is read: the stream is whole and charged, with no error event after it', async () => {
    behaviour = 'native-bare-cr';
    const { response, text } = await nativeStream();
    expect(response.headers.get('x-svc-supplier')).toBe('misbehaving-responses');
    expect(text).not.toContain('event: error');
    const totals = /^: svc-totals (.*)$/m.exec(text)?.[1];
    expect(JSON.parse(totals ?? '{}')).toMatchObject({ input_tokens: 7, output_tokens: 3 });
  });

  test('a JSON document answering the stream request is not a stream: the next supplier streams the answer', async () => {
    behaviour = 'native-json';
    await expectServedByTheNextSupplier();
  });

  test('a stream cut after its opening events, before anything was generated, is failed over: the client sees only the next supplier', async () => {
    behaviour = 'native-cut-early';
    const text = await expectServedByTheNextSupplier();
    expect(text).not.toContain('event: error');
    expect(text.match(/event: response\.created/g)).toHaveLength(1);
  });

  test("a response.failed before anything was generated is the supplier's error, failed over like a dropped stream", async () => {
    behaviour = 'native-failed-early';
    const text = await expectServedByTheNextSupplier();
    expect(text).not.toContain('The model crashed');
  });
});
