// A supplier's error answer reaches the client (its code, status and message), but never the
// credential the gateway sent it: some suppliers and proxies quote the Authorization or x-api-key
// they received. And a supplier refusing the gateway's own credential is not the client's to retry.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';

const openAiKey = 'sk-gateway-openai-7f3c9a21d4';
const anthropicKey = 'sk-ant-gateway-2b8e6f10c5';
const responsesKey = 'sk-gateway-responses-5d1e8a';

/** A stream that generates, then reports an error quoting the credential (`STREAM` in the prompt); `INBAND`: a 200 body with an error object. */
function answerInBand(url: string, body: string, sent: string, res: import('node:http').ServerResponse): boolean {
  const quoted = `quota exceeded for ${sent}`;
  if (body.includes('INBAND')) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: quoted, type: 'server_error', code: 'bad' } }));
    return true;
  }
  if (!body.includes('STREAM')) return false;
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const event = (name: string | undefined, data: unknown) => `${name ? `event: ${name}\n` : ''}data: ${JSON.stringify(data)}\n\n`;
  if (url.endsWith('/messages')) {
    res.end(
      event('message_start', {
        type: 'message_start',
        message: { id: 'm1', type: 'message', role: 'assistant', model: 'x', content: [], usage: { input_tokens: 1, output_tokens: 0 } },
      }) +
        event('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }) +
        event('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hello' } }) +
        // Escaped as a JSON writer may: the masking reads the text as the client's parser will.
        event('error', { type: 'error', error: { type: 'overloaded_error', message: quoted } }).replace(/-/g, '\\u002d'),
    );
  } else if (url.endsWith('/responses')) {
    res.end(
      event('response.created', { type: 'response.created', sequence_number: 0, response: { id: 'r1', status: 'in_progress' } }) +
        event('response.output_text.delta', {
          type: 'response.output_text.delta',
          sequence_number: 1,
          item_id: 'i1',
          output_index: 0,
          content_index: 0,
          delta: 'Hello',
        }) +
        event('error', { type: 'error', sequence_number: 2, code: 'server_error', message: quoted, param: null }),
    );
  } else {
    res.end(
      event(undefined, { id: 'c1', object: 'chat.completion.chunk', model: 'x', choices: [{ index: 0, delta: { content: 'Hello' } }] }) +
        event(undefined, { error: { message: quoted, type: 'server_error', code: 'bad' } }),
    );
  }
  return true;
}

/** Answers every call with the error its prompt names (`MODE:<status>`), quoting the credential it received. */
let server: Server;
let harness: GatewayHarness;

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const status = Number(/MODE:(\d{3})/.exec(body)?.[1] ?? 400);
      const sent = req.headers.authorization ?? `x-api-key=${String(req.headers['x-api-key'])}`;
      if (answerInBand(req.url ?? '', body, sent, res)) return;
      res.writeHead(status, { 'content-type': 'application/json' });
      if (req.url?.endsWith('/messages'))
        return res.end(
          JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: `Bad request; you sent ${sent}` } }),
        );
      res.end(
        JSON.stringify({ error: { message: `Refused for key ${sent} (HTTP ${status})`, type: 'invalid_request_error', code: 'bad' } }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  harness = await startGatewayHarness(
    [
      {
        name: 'echo-openai',
        region: 'EU',
        baseUrl: url,
        credentials: [{ name: 'main', api_key_env: 'ECHO_OPENAI_KEY' }],
        models: [{ id: 'echo-o' }],
      },
      {
        name: 'echo-anthropic',
        region: 'EU',
        protocol: 'anthropic',
        baseUrl: url,
        credentials: [{ name: 'main', api_key_env: 'ECHO_ANTHROPIC_KEY' }],
        models: [{ id: 'echo-a' }],
      },
      {
        name: 'echo-responses',
        region: 'EU',
        protocol: 'openai-responses',
        baseUrl: url,
        credentials: [{ name: 'main', api_key_env: 'ECHO_RESPONSES_KEY' }],
        models: [{ id: 'echo-r' }],
      },
    ],
    { settings: { ECHO_OPENAI_KEY: openAiKey, ECHO_ANTHROPIC_KEY: anthropicKey, ECHO_RESPONSES_KEY: responsesKey } },
  );
});
afterAll(async () => {
  await harness?.close();
  await new Promise((resolve) => server?.close(resolve));
});

describe('supplier errors and the gateway’s credentials', () => {
  it('a supplier quoting the credential it received: the client gets its error without the credential', async () => {
    const key = await harness.createKey();
    const openai = new OpenAI({ baseURL: `${harness.gateway.url}/v1`, apiKey: key, maxRetries: 0 });
    const anthropic = new Anthropic({ baseURL: harness.gateway.url, apiKey: key, maxRetries: 0 });
    const failures = [
      await openai.chat.completions.create({ model: 'echo-o', messages: [{ role: 'user', content: 'MODE:400' }] }).catch((e: unknown) => e),
      await openai.chat.completions.create({ model: 'echo-o', messages: [{ role: 'user', content: 'MODE:429' }] }).catch((e: unknown) => e),
      await anthropic.messages
        .create({ model: 'echo-a', max_tokens: 5, messages: [{ role: 'user', content: 'MODE:400' }] })
        .catch((e: unknown) => e),
      // An OpenAI client on the Anthropic supplier: the same text, translated.
      await openai.chat.completions.create({ model: 'echo-a', messages: [{ role: 'user', content: 'MODE:400' }] }).catch((e: unknown) => e),
    ];
    const statuses = failures.map((e) => (e instanceof OpenAI.APIError || e instanceof Anthropic.APIError ? e.status : String(e)));
    expect(statuses).toEqual([400, 429, 400, 400]);
    for (const failure of failures) {
      const text = JSON.stringify((failure as { error?: unknown }).error);
      expect(text).not.toContain(openAiKey);
      expect(text).not.toContain(anthropicKey);
      // The supplier's message is kept, the credential masked in it.
      expect(text).toContain('[credential removed]');
    }
  });

  it('a supplier refusing the gateway’s own credential: 502, and the client is told not to retry', async () => {
    const key = await harness.createKey();
    const res = await fetch(`${harness.gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'echo-o', messages: [{ role: 'user', content: 'MODE:401' }] }),
    });
    expect(res.status).toBe(502);
    expect(res.headers.get('x-should-retry')).toBe('false');
    const { error } = (await res.json()) as { error: { code: string; retryable: boolean; human_message: string } };
    expect([error.code, error.retryable]).toEqual(['upstream_error', false]);
    expect(error.human_message).toContain('refused the gateway');
    expect(JSON.stringify(error)).not.toContain(openAiKey);
  });

  it('an error a supplier reports inside its stream (or in a 200 body) reaches the client without the credential', async () => {
    const key = await harness.createKey();
    const post = async (path: string, body: unknown) => {
      const res = await fetch(`${harness.gateway.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: res.status, text: await res.text() };
    };
    const stream = { messages: [{ role: 'user', content: 'STREAM' }], stream: true, max_tokens: 5 };
    const answers = {
      'openai stream': await post('/v1/chat/completions', { model: 'echo-o', ...stream }),
      'anthropic stream': await post('/v1/messages', { model: 'echo-a', ...stream }),
      'anthropic supplier, openai client': await post('/v1/chat/completions', { model: 'echo-a', ...stream }),
      'openai supplier, anthropic client': await post('/v1/messages', { model: 'echo-o', ...stream }),
      'native responses': await post('/v1/native/responses', {
        model: 'echo-r',
        input: [{ role: 'user', content: 'STREAM' }],
        stream: true,
      }),
      'error object in a 200 body': await post('/v1/chat/completions', {
        model: 'echo-o',
        messages: [{ role: 'user', content: 'INBAND' }],
      }),
    };
    for (const [lane, { status, text }] of Object.entries(answers)) {
      expect(text, lane).toMatch(/quota exceeded for/);
      for (const secret of [openAiKey, anthropicKey, responsesKey]) {
        expect(text, lane).not.toContain(secret);
        expect(text.replace(/\\u002d/g, '-'), lane).not.toContain(secret);
      }
      expect(text, lane).toContain('[credential removed]');
      expect(status, lane).toBe(lane.startsWith('error object') ? 502 : 200);
    }
  });
});
