// An Anthropic-protocol supplier framing its stream in ways SSE allows but few servers use (found by
// an outside probe): an event's JSON split over several `data:` lines reached Anthropic clients as a
// broken frame (the second line without its `data:`), a stream whose every line ended with a bare CR
// lost its last event and was reported cut off, and a stream of `message_stop` alone was a charged
// empty 200. Both client families read the first two whole now; the third fails over.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';

let server: Server;
let h: GatewayHarness;

/** A whole Anthropic stream answering "Hello there", as events of (type, JSON). */
function wholeStream(): [string, object][] {
  return [
    [
      'message_start',
      {
        type: 'message_start',
        message: {
          id: 'msg_1',
          type: 'message',
          role: 'assistant',
          model: 'x',
          content: [],
          stop_reason: null,
          usage: { input_tokens: 9, output_tokens: 1 },
        },
      },
    ],
    ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
    ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hello there' } }],
    ['content_block_stop', { type: 'content_block_stop', index: 0 }],
    ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 3 } }],
    ['message_stop', { type: 'message_stop' }],
  ];
}

/** The stream for a model: its name says how it is framed. */
function framed(model: string): string {
  const events = wholeStream();
  if (model === 'multi-line')
    // Each event's JSON broken after its first comma, over two data lines (SSE joins them with a newline).
    return events.map(([name, data]) => `event: ${name}\ndata: ${JSON.stringify(data).replace(',', ',\ndata: ')}\n\n`).join('');
  if (model === 'bare-cr') return events.map(([name, data]) => `event: ${name}\rdata: ${JSON.stringify(data)}\r\r`).join('');
  if (model === 'stop-only') return 'event: message_stop\ndata: {"type":"message_stop"}\n\n';
  // Cut before the last event's blank line: that event never completed (SSE discards it).
  if (model === 'cut-last')
    return events
      .map(([name, data]) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`)
      .join('')
      .slice(0, -1);
  throw new Error(`no framing for ${model}`);
}

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const { model } = JSON.parse(body) as { model: string };
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(framed(model));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const models = ['multi-line', 'bare-cr', 'stop-only', 'cut-last'].map((id) => ({ id, input_usd_per_mtok: 1, output_usd_per_mtok: 2 }));
  h = await startGatewayHarness([
    {
      name: 'odd-framing',
      region: 'EU',
      protocol: 'anthropic',
      baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
      models,
    },
    // Serves only the model whose stream is empty, as the failover target.
    { name: 'sim-good', region: 'EU', protocol: 'anthropic', priority: 2, models: [models[2]!] },
  ]);
});
afterAll(async () => {
  await h?.close();
  await new Promise((resolve) => server?.close(resolve));
});

describe('an Anthropic supplier framing its stream unusually', () => {
  test.each(['multi-line', 'bare-cr'])('%s: both SDK families read the whole answer', async (model) => {
    const secret = await h.createKey();
    const message = await new Anthropic({ baseURL: h.gateway.url, apiKey: secret, maxRetries: 0 }).messages
      .stream({ model, max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] })
      .finalMessage();
    expect(message.content[0]).toMatchObject({ type: 'text', text: 'Hello there' });
    expect(message.stop_reason).toBe('end_turn');
    const stream = await new OpenAI({ baseURL: `${h.gateway.url}/v1`, apiKey: secret, maxRetries: 0 }).chat.completions.create({
      model,
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    });
    let text = '';
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(text).toBe('Hello there');
    expect(finish).toBe('stop');
  });

  test('a stream of message_stop alone is no answer: the next supplier answers, for both families', async () => {
    const secret = await h.createKey();
    const { data: message, response } = await new Anthropic({ baseURL: h.gateway.url, apiKey: secret, maxRetries: 0 }).messages
      .create({ model: 'stop-only', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    expect(response.headers.get('x-svc-supplier')).toBe('sim-good');
    let text = '';
    for await (const event of message)
      if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') text += event.delta.text;
    expect(text.length).toBeGreaterThan(0);
    const { response: viaOpenAi } = await new OpenAI({ baseURL: `${h.gateway.url}/v1`, apiKey: secret, maxRetries: 0 }).chat.completions
      .create({ model: 'stop-only', stream: true, messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    expect(viaOpenAi.headers.get('x-svc-supplier')).toBe('sim-good');
    await viaOpenAi.body?.cancel();
  });

  test('a stream cut before its last event was complete is interrupted, not taken as whole', async () => {
    const secret = await h.createKey();
    const failed = await new Anthropic({ baseURL: h.gateway.url, apiKey: secret, maxRetries: 0 }).messages
      .stream({ model: 'cut-last', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] })
      .finalMessage()
      .then(
        () => undefined,
        (e: unknown) => e as Error,
      );
    expect(String(failed)).toContain('stream_interrupted');
  });
});
