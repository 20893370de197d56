// Answers of unusual shape from an OpenAI-protocol supplier (found by an outside probe): each
// reaches both client families as the same catalogue error or the same readable answer. Every model
// is served by a supplier of its own (one server behind them), so one model's failures never open
// another's circuit, and nothing fails over.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';

const credential = 'sk-shapes-credential-0123456789';

/** One OpenAI stream chunk as an SSE frame. */
const frame = (model: string, choices: object[], extra: object = {}) =>
  `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model, choices, ...extra })}\n\n`;
const completion = (model: string, choices: object[], extra: object = {}) =>
  JSON.stringify({ id: 'c1', object: 'chat.completion', created: 1, model, choices, ...extra });
const usage = { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 };

/** A whole answer "Hello" of `model`, as a completion or as a stream. */
function hello(model: string, stream: boolean): { type: string; text: string } {
  if (!stream) {
    const choice = { index: 0, message: { role: 'assistant', content: 'Hello' }, finish_reason: 'stop' };
    return { type: 'application/json', text: completion(model, [choice], { usage }) };
  }
  const text =
    frame(model, [{ index: 0, delta: { role: 'assistant', content: 'Hello' }, finish_reason: null }]) +
    frame(model, [{ index: 0, delta: {}, finish_reason: 'stop' }]) +
    frame(model, [], { usage }) +
    'data: [DONE]\n\n';
  return { type: 'text/event-stream', text };
}

/** What the supplier answers, by model (its request's `model`, and whether it asked for a stream). */
const answers: Record<string, (res: ServerResponse, stream: boolean, req: IncomingMessage) => void> = {
  // A 200 JSON error document, whatever was asked; its message quotes the credential it was sent.
  'json-error': (res, _stream, req) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { code: 'server_error', message: `The model crashed (you sent ${req.headers.authorization})` } }));
  },
  // The same error document after a UTF-8 byte order mark.
  'json-error-bom': (res, _stream, req) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      `\uFEFF${JSON.stringify({ error: { code: 'server_error', message: `The model crashed (you sent ${req.headers.authorization})` } })}`,
    );
  },
  // Rate limited, with a fractional Retry-After.
  'retry-fraction': (res) => {
    res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1.5' });
    res.end(JSON.stringify({ error: { code: 'rate_limit_exceeded', type: 'requests', message: 'Slow down' } }));
  },
  // Gzipped unless asked for identity (RFC 9110 lets a server choose when Accept-Encoding is absent).
  'gzip-unasked': (res, stream, req) => {
    const { type, text } = hello('gzip-unasked', stream);
    if (req.headers['accept-encoding'] === 'identity') return res.writeHead(200, { 'content-type': type }).end(text);
    res.writeHead(200, { 'content-type': type, 'content-encoding': 'gzip' }).end(gzipSync(text));
  },
  // Gzipped whatever was asked.
  'gzip-always': (res, stream) => {
    const { type, text } = hello('gzip-always', stream);
    res.writeHead(200, { 'content-type': type, 'content-encoding': 'gzip' }).end(gzipSync(text));
  },
  // A JSON answer that begins with a UTF-8 byte order mark.
  bom: (res, stream) => {
    const { type, text } = hello('bom', stream);
    res.writeHead(200, { 'content-type': type }).end(`\uFEFF${text}`);
  },
  // A whole answer whose choice has no message.
  'no-message': (res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(completion('no-message', [{ index: 0, finish_reason: 'stop' }], { usage }));
  },
  // A stream of usage-only chunks (`choices: []`) and [DONE]: no choice at all.
  'no-choice-stream': (res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end(frame('no-choice-stream', []) + frame('no-choice-stream', [], { usage }) + 'data: [DONE]\n\n');
  },
  // A tool call whose arguments are a JSON object, not the string OpenAI's schema has.
  'object-arguments': (res, stream) => {
    const call = { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: { city: 'Paris' } } };
    if (!stream) {
      res.writeHead(200, { 'content-type': 'application/json' });
      const message = { role: 'assistant', content: null, tool_calls: [call] };
      return res.end(completion('object-arguments', [{ index: 0, message, finish_reason: 'tool_calls' }], { usage }));
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end(
      frame('object-arguments', [{ index: 0, delta: { role: 'assistant', tool_calls: [{ index: 0, ...call }] }, finish_reason: null }]) +
        frame('object-arguments', [{ index: 0, delta: {}, finish_reason: 'tool_calls' }]) +
        frame('object-arguments', [], { usage }) +
        'data: [DONE]\n\n',
    );
  },
};

let server: Server;
let h: GatewayHarness;

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const { model, stream } = JSON.parse(body) as { model: string; stream?: boolean };
      answers[model]?.(res, stream === true, req);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  h = await startGatewayHarness(
    [
      ...Object.keys(answers).map((model) => ({
        name: `s-${model}`,
        region: 'EU',
        baseUrl,
        credentials: [{ name: 'main', api_key_env: 'SHAPES_KEY' }],
        models: [{ id: model, input_usd_per_mtok: 1, output_usd_per_mtok: 2 }],
      })),
      // The native Responses lane, answered with the same JSON error document.
      {
        name: 's-native-json-error',
        region: 'EU',
        protocol: 'openai-responses' as const,
        baseUrl,
        credentials: [{ name: 'main', api_key_env: 'SHAPES_KEY' }],
        models: [{ id: 'native-json-error', upstream: 'json-error', input_usd_per_mtok: 1, output_usd_per_mtok: 2 }],
      },
    ],
    { settings: { SHAPES_KEY: credential } },
  );
});
afterAll(async () => {
  await h?.close();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
});

const messages = [{ role: 'user' as const, content: 'hi' }];
/** The error a call ends in (undefined if it answered). */
const refused = (call: Promise<unknown>) =>
  call.then(
    () => undefined,
    (e: unknown) => e as InstanceType<typeof OpenAI.APIError>,
  );

async function clients() {
  const secret = await h.createKey();
  return {
    secret,
    openai: new OpenAI({ baseURL: `${h.gateway.url}/v1`, apiKey: secret, maxRetries: 0 }),
    anthropic: new Anthropic({ baseURL: h.gateway.url, apiKey: secret, maxRetries: 0 }),
  };
}

describe('an OpenAI-protocol supplier answering in an unusual shape', () => {
  test("a stream request answered with a 200 JSON error document relays the supplier's code and masked message, as a whole answer does", async () => {
    const { openai, anthropic } = await clients();
    const whole = await refused(openai.chat.completions.create({ model: 'json-error', messages }));
    const streamed = await refused(openai.chat.completions.create({ model: 'json-error', messages, stream: true }));
    const viaAnthropic = await refused(anthropic.messages.create({ model: 'json-error', max_tokens: 10, messages, stream: true }));
    // A byte order mark before the document changes nothing, on a stream request as on a whole one.
    const wholeBom = await refused(openai.chat.completions.create({ model: 'json-error-bom', messages }));
    const streamedBom = await refused(openai.chat.completions.create({ model: 'json-error-bom', messages, stream: true }));
    for (const error of [whole, streamed, wholeBom, streamedBom]) {
      expect(error?.status).toBe(502);
      expect(error?.code).toBe('server_error');
      expect(error?.message).toContain('The model crashed');
      expect(error?.message).not.toContain(credential);
    }
    expect(viaAnthropic?.status).toBe(502);
    expect(JSON.stringify(viaAnthropic?.error)).toContain('server_error');
    expect(JSON.stringify(viaAnthropic?.error)).not.toContain(credential);
  });

  test('the native Responses lane: a stream request answered with a JSON error document relays its code, masked', async () => {
    const { secret } = await clients();
    const answer = await fetch(`${h.gateway.url}/v1/native/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'native-json-error', stream: true, input: [{ role: 'user', content: 'hi' }] }),
    });
    expect(answer.status).toBe(502);
    const text = await answer.text();
    expect(JSON.parse(text)).toMatchObject({ error: { code: 'server_error' } });
    expect(text).toContain('The model crashed');
    expect(text).not.toContain(credential);
  });

  test("a fractional Retry-After: the body's retry_after_seconds says what the Retry-After header says, whole seconds", async () => {
    const { secret } = await clients();
    const answer = await fetch(`${h.gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'retry-fraction', messages }),
    });
    expect(answer.status).toBe(429);
    const body = (await answer.json()) as { error: { code: string; retry_after_seconds?: number } };
    expect(answer.headers.get('retry-after')).toBe('2');
    expect(body.error).toMatchObject({ code: 'rate_limit_exceeded', retry_after_seconds: 2 });
  });

  test('the gateway asks suppliers for uncompressed answers; one that compresses anyway is named invalid_backend_response', async () => {
    const { openai } = await clients();
    const whole = await openai.chat.completions.create({ model: 'gzip-unasked', messages });
    expect(whole.choices[0]?.message.content).toBe('Hello');
    let text = '';
    for await (const chunk of await openai.chat.completions.create({ model: 'gzip-unasked', messages, stream: true }))
      text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('Hello');
    for (const stream of [false, true]) {
      const error = await refused(openai.chat.completions.create({ model: 'gzip-always', messages, stream }));
      expect(error?.status).toBe(502);
      expect(error?.code).toBe('invalid_backend_response');
      expect(error?.message).toContain('gzip');
    }
  });

  test('a JSON answer that begins with a byte order mark is read', async () => {
    const { openai, anthropic } = await clients();
    const whole = await openai.chat.completions.create({ model: 'bom', messages });
    expect(whole.choices[0]?.message.content).toBe('Hello');
    const message = await anthropic.messages.create({ model: 'bom', max_tokens: 10, messages });
    expect(message.content[0]).toMatchObject({ type: 'text', text: 'Hello' });
  });

  test('a whole answer whose choice has no message is invalid_backend_response for both client families', async () => {
    const { openai, anthropic } = await clients();
    const viaOpenAi = await refused(openai.chat.completions.create({ model: 'no-message', messages }));
    const viaAnthropic = await refused(anthropic.messages.create({ model: 'no-message', max_tokens: 10, messages }));
    expect(viaOpenAi?.status).toBe(502);
    expect(viaOpenAi?.code).toBe('invalid_backend_response');
    expect(viaAnthropic?.status).toBe(502);
    expect(JSON.stringify(viaAnthropic?.error)).toContain('invalid_backend_response');
  });

  test('a stream that carried no choice at all (usage-only chunks, then [DONE]) is 502 empty_stream for both client families', async () => {
    const { openai, anthropic } = await clients();
    const viaOpenAi = await refused(
      openai.chat.completions.create({ model: 'no-choice-stream', messages, stream: true, stream_options: { include_usage: true } }),
    );
    const viaAnthropic = await refused(anthropic.messages.create({ model: 'no-choice-stream', max_tokens: 10, messages, stream: true }));
    expect(viaOpenAi?.status).toBe(502);
    expect(viaOpenAi?.code).toBe('empty_stream');
    expect(viaAnthropic?.status).toBe(502);
    expect(JSON.stringify(viaAnthropic?.error)).toContain('empty_stream');
  });

  test('tool-call arguments sent as a JSON object: the input for Anthropic clients, a JSON string for OpenAI clients', async () => {
    const { openai, anthropic } = await clients();
    const tools = [
      {
        type: 'function' as const,
        function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
      },
    ];
    const whole = await openai.chat.completions.create({ model: 'object-arguments', messages, tools });
    expect(whole.choices[0]?.message.tool_calls?.[0]).toMatchObject({ function: { name: 'get_weather', arguments: '{"city":"Paris"}' } });
    let streamedArguments: unknown = '';
    for await (const chunk of await openai.chat.completions.create({ model: 'object-arguments', messages, tools, stream: true })) {
      const args: unknown = chunk.choices[0]?.delta.tool_calls?.[0]?.function?.arguments;
      if (args !== undefined) streamedArguments = typeof args === 'string' ? `${String(streamedArguments)}${args}` : args;
    }
    expect(streamedArguments).toBe('{"city":"Paris"}');
    const anthropicTools = [{ name: 'get_weather', input_schema: { type: 'object' as const, properties: { city: { type: 'string' } } } }];
    const message = await anthropic.messages.create({ model: 'object-arguments', max_tokens: 10, messages, tools: anthropicTools });
    expect(message.content[0]).toMatchObject({ type: 'tool_use', name: 'get_weather', input: { city: 'Paris' } });
    const streamed = await anthropic.messages
      .stream({ model: 'object-arguments', max_tokens: 10, messages, tools: anthropicTools })
      .finalMessage();
    expect(streamed.content[0]).toMatchObject({ type: 'tool_use', name: 'get_weather', input: { city: 'Paris' } });
  });
});
