// A supplier that reports no usage — an OpenAI-compatible server that ignores
// `stream_options.include_usage`, or a stream cut off before its usage chunk — was charged $0: a
// key's budget or a payer's wallet could be spent through without limit. The gateway counts what
// the supplier left out: the request with its tokenizer, and the answer as far as it came.
import Anthropic from '@anthropic-ai/sdk';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';
import { waitFor } from '../support/wait-for.js';

const answerParts = ['The quick brown fox ', 'jumps over the lazy dog, ', 'twice on Sundays.'];
const question = 'Tell me something about foxes and dogs, in one sentence please.';
/** An answer of some 6,000 tokens: well above the 4,096 a reservation assumes without max_tokens. */
const longAnswer = Array.from({ length: 3_000 }, (_, i) => `fox${i % 10} dog`).join(' ');

let server: Server;
let h: GatewayHarness;

/** A Responses stream of the answer whose terminal event carries no usage. */
function responsesStream(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const event = (type: string, data: object) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  event('response.created', { response: { id: 'r1', status: 'in_progress' } });
  for (const delta of answerParts) event('response.output_text.delta', { item_id: 'm1', output_index: 0, content_index: 0, delta });
  event('response.completed', { response: { id: 'r1', status: 'completed', usage: null } });
  res.end();
}

/**
 * An Anthropic stream cut off after two deltas: message_start carries the input count and the
 * placeholder output count (1) Anthropic sends there; the real output count would come with
 * message_delta, which never does.
 */
function anthropicCutStream(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const event = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
  const message = {
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model: 'acut',
    content: [],
    stop_reason: null,
    usage: { input_tokens: 11, output_tokens: 1 },
  };
  let text = event('message_start', { message }) + event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
  for (const part of answerParts.slice(0, 2)) text += event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: part } });
  res.write(text, () => res.destroy());
}

/** A supplier (OpenAI chat and Responses) that never reports usage; model `cut` stops mid-stream. */
function silentSupplier(): Server {
  return createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      if (req.url?.endsWith('/responses')) return responsesStream(res);
      if (req.url?.endsWith('/messages')) {
        if ((JSON.parse(body) as { stream?: boolean }).stream) return anthropicCutStream(res);
        // A whole Anthropic message without usage.
        res.setHeader('content-type', 'application/json');
        const message = {
          id: 'msg_1',
          type: 'message',
          role: 'assistant',
          model: 'acut',
          content: [{ type: 'text', text: answerParts.join('') }],
          stop_reason: 'end_turn',
        };
        return res.end(JSON.stringify(message));
      }
      const { model, stream } = JSON.parse(body) as { model: string; stream?: boolean };
      const base = { id: 'c1', created: 1, model };
      if (!stream) {
        res.setHeader('content-type', 'application/json');
        const message = { role: 'assistant', content: model === 'long' ? longAnswer : answerParts.join('') };
        return res.end(JSON.stringify({ ...base, object: 'chat.completion', choices: [{ index: 0, message, finish_reason: 'stop' }] }));
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = (delta: object, finish: string | null = null) =>
        `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      const parts = model === 'cut' ? answerParts.slice(0, 2) : model === 'long' ? [longAnswer] : answerParts;
      for (const [i, part] of parts.entries()) res.write(chunk(i === 0 ? { role: 'assistant', content: part } : { content: part }));
      // Cut, once what was written has left: the connection ends without a finish reason, usage or [DONE].
      if (model === 'cut') return res.write('', () => res.destroy());
      res.write(chunk({}, 'stop'));
      res.end('data: [DONE]\n\n');
    });
  });
}

beforeAll(async () => {
  server = silentSupplier();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  h = await startGatewayHarness([
    {
      name: 'silent',
      region: 'EU',
      baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
      models: [
        { id: 'quiet', input_usd_per_mtok: 1, output_usd_per_mtok: 2 },
        { id: 'cut', input_usd_per_mtok: 1, output_usd_per_mtok: 2 },
        { id: 'long', input_usd_per_mtok: 1, output_usd_per_mtok: 2 },
      ],
    },
    {
      name: 'silent-anthropic',
      region: 'EU',
      protocol: 'anthropic',
      baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
      models: [{ id: 'acut', input_usd_per_mtok: 1, output_usd_per_mtok: 2 }],
    },
    {
      name: 'silent-responses',
      region: 'EU',
      protocol: 'openai-responses',
      baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
      models: [{ id: 'native', input_usd_per_mtok: 1, output_usd_per_mtok: 2 }],
    },
  ]);
});
afterAll(async () => {
  await h?.close();
  await new Promise((resolve) => server?.close(resolve));
});

interface AuditRow {
  status: number;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
}
const manage = async <T>(path: string) =>
  (await (await fetch(`${h.gateway.url}/v1/manage${path}`, { headers: { authorization: `Bearer ${h.adminKey}` } })).json()) as T;

/** The gateway's own count of these texts as user messages, without the per-message framing. */
async function tokensOf(secret: string, texts: string[]): Promise<number> {
  const anthropic = new Anthropic({ baseURL: h.gateway.url, apiKey: secret, maxRetries: 0 });
  const { input_tokens } = await anthropic.messages.countTokens({
    model: 'quiet',
    messages: texts.map((text) => ({ role: 'user' as const, content: text })),
  });
  const framing = (await anthropic.messages.countTokens({ model: 'quiet', messages: [{ role: 'user', content: '' }] })).input_tokens;
  return input_tokens - framing * texts.length;
}

describe('a supplier that reports no usage', () => {
  test('OpenAI and Anthropic clients, whole and streamed: charged for the counted request and answer, and the budget sees it', async () => {
    const { id, secret } = await h.createKeyWithId({ budgetLimitUsd: 1, budgetPeriod: 'daily' });
    const openai = new OpenAI({ baseURL: `${h.gateway.url}/v1`, apiKey: secret, maxRetries: 0 });
    const anthropic = new Anthropic({ baseURL: h.gateway.url, apiKey: secret, maxRetries: 0 });
    const messages = [{ role: 'user' as const, content: question }];

    const whole = await openai.chat.completions.create({ model: 'quiet', messages }).withResponse();
    expect(whole.data.choices[0]?.message.content).toBe(answerParts.join(''));
    const stream = await openai.chat.completions.create({
      model: 'quiet',
      messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    let streamed = '';
    let streamedUsage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      streamed += chunk.choices[0]?.delta.content ?? '';
      streamedUsage = chunk.usage ?? streamedUsage;
    }
    expect(streamed).toBe(answerParts.join(''));
    const message = await anthropic.messages.create({ model: 'quiet', max_tokens: 100, messages });
    expect(message.content[0]).toMatchObject({ type: 'text', text: answerParts.join('') });
    const anthropicStream = anthropic.messages.stream({ model: 'quiet', max_tokens: 100, messages });
    const streamedMessage = await anthropicStream.finalMessage();
    expect(streamedMessage.content[0]).toMatchObject({ text: answerParts.join('') });

    const input = await tokensOf(secret, [question]);
    // Streamed or whole, the answer is counted as the one text it is, not delta by delta.
    const output = await tokensOf(secret, [answerParts.join('')]);
    expect(input).toBeGreaterThan(10);
    // The whole answer's headers carry the charged totals.
    expect(Number(whole.response.headers.get('x-svc-input-tokens'))).toBe(input + 3);
    expect(Number(whole.response.headers.get('x-svc-output-tokens'))).toBe(output);
    // The SDKs read the charged usage from the stream's own usage event (the supplier sent none).
    expect(streamedUsage).toMatchObject({ prompt_tokens: input + 3, completion_tokens: output, total_tokens: input + 3 + output });
    expect(streamedMessage.usage).toMatchObject({ input_tokens: input + 3, output_tokens: output });
    expect(message.usage).toMatchObject({ input_tokens: input + 3, output_tokens: output });
    expect(whole.data.usage).toMatchObject({ prompt_tokens: input + 3, completion_tokens: output, total_tokens: input + 3 + output });

    await waitFor('four requests audited', async () => (await manage<{ data: AuditRow[] }>(`/keys/${id}/audit`)).data.length === 4);
    const rows = (await manage<{ data: AuditRow[] }>(`/keys/${id}/audit`)).data;
    for (const row of rows) {
      expect(row.status).toBe(200);
      expect(row.input_tokens).toBe(input + 3);
      expect(row.output_tokens).toBe(output);
      expect(row.cost_usd).toBeCloseTo(((input + 3) * 1 + row.output_tokens * 2) / 1e6, 9);
    }
    const spent = rows.reduce((sum, r) => sum + r.cost_usd, 0);
    expect(spent).toBeGreaterThan(0);
    const key = await manage<{ budget_used: number }>(`/keys/${id}`);
    expect(key.budget_used).toBeCloseTo(spent, 9);
  });

  test('an answer longer than the 4,096 tokens assumed without max_tokens is charged its whole count, whole and streamed', async () => {
    const { id, secret } = await h.createKeyWithId();
    const openai = new OpenAI({ baseURL: `${h.gateway.url}/v1`, apiKey: secret, maxRetries: 0 });
    const messages = [{ role: 'user' as const, content: question }];
    const output = await tokensOf(secret, [longAnswer]);
    expect(output).toBeGreaterThan(5_000);

    const whole = await openai.chat.completions.create({ model: 'long', messages }).withResponse();
    expect(whole.data.choices[0]?.message.content).toBe(longAnswer);
    expect(Number(whole.response.headers.get('x-svc-output-tokens'))).toBe(output);
    expect(whole.data.usage?.completion_tokens).toBe(output);
    let streamedUsage: OpenAI.CompletionUsage | null | undefined;
    const stream = await openai.chat.completions.create({ model: 'long', messages, stream: true, stream_options: { include_usage: true } });
    for await (const chunk of stream) streamedUsage = chunk.usage ?? streamedUsage;
    expect(streamedUsage?.completion_tokens).toBe(output);
    // With max_tokens the count still stops at it: a supplier cannot be charged beyond what was asked for.
    const capped = await openai.chat.completions.create({ model: 'long', messages, max_tokens: 100 }).withResponse();
    expect(Number(capped.response.headers.get('x-svc-output-tokens'))).toBe(100);

    await waitFor('three requests audited', async () => (await manage<{ data: AuditRow[] }>(`/keys/${id}/audit`)).data.length === 3);
    const rows = (await manage<{ data: AuditRow[] }>(`/keys/${id}/audit`)).data;
    expect(rows.map((r) => r.output_tokens).sort((a, b) => a - b)).toEqual([100, output, output]);
  });

  test('a stream cut off before its usage: the client gets the error, and what was streamed is charged', async () => {
    const { id, secret } = await h.createKeyWithId();
    const openai = new OpenAI({ baseURL: `${h.gateway.url}/v1`, apiKey: secret, maxRetries: 0 });
    const stream = await openai.chat.completions.create({ model: 'cut', messages: [{ role: 'user', content: question }], stream: true });
    let streamed = '';
    await expect(
      (async () => {
        for await (const chunk of stream) streamed += chunk.choices[0]?.delta.content ?? '';
      })(),
    ).rejects.toThrow();
    expect(streamed).toBe(answerParts.slice(0, 2).join(''));
    const output = await tokensOf(secret, [answerParts.slice(0, 2).join('')]);
    await waitFor('the request audited', async () => (await manage<{ data: AuditRow[] }>(`/keys/${id}/audit`)).data.length === 1);
    const [row] = (await manage<{ data: AuditRow[] }>(`/keys/${id}/audit`)).data;
    expect(row?.output_tokens).toBe(output);
    expect(row?.input_tokens).toBe((await tokensOf(secret, [question])) + 3);
    expect(row?.cost_usd).toBeGreaterThan(0);
  });

  test("an Anthropic stream cut before its message_delta: charged the streamed text, not message_start's placeholder of 1", async () => {
    const { id, secret } = await h.createKeyWithId();
    const messages = [{ role: 'user' as const, content: question }];
    const openai = new OpenAI({ baseURL: `${h.gateway.url}/v1`, apiKey: secret, maxRetries: 0 });
    const anthropic = new Anthropic({ baseURL: h.gateway.url, apiKey: secret, maxRetries: 0 });
    await expect(
      (async () => {
        for await (const _chunk of await openai.chat.completions.create({ model: 'acut', messages, stream: true })) {
          // the two deltas arrive, then the error
        }
      })(),
    ).rejects.toThrow();
    await expect(anthropic.messages.stream({ model: 'acut', max_tokens: 100, messages }).finalMessage()).rejects.toThrow();
    const output = await tokensOf(secret, [answerParts.slice(0, 2).join('')]);
    await waitFor('both requests audited', async () => (await manage<{ data: AuditRow[] }>(`/keys/${id}/audit`)).data.length === 2);
    for (const row of (await manage<{ data: AuditRow[] }>(`/keys/${id}/audit`)).data) {
      expect(row).toMatchObject({ input_tokens: 11, output_tokens: output });
    }
  });

  test('a whole Anthropic message without usage is the answer, charged the counted request and text (it was a 502)', async () => {
    const { id, secret } = await h.createKeyWithId();
    const messages = [{ role: 'user' as const, content: question }];
    const viaOpenAi = await new OpenAI({ baseURL: `${h.gateway.url}/v1`, apiKey: secret, maxRetries: 0 }).chat.completions.create({
      model: 'acut',
      messages,
    });
    expect(viaOpenAi.choices[0]?.message.content).toBe(answerParts.join(''));
    const viaAnthropic = await new Anthropic({ baseURL: h.gateway.url, apiKey: secret, maxRetries: 0 }).messages.create({
      model: 'acut',
      max_tokens: 100,
      messages,
    });
    expect(viaAnthropic.content[0]).toMatchObject({ type: 'text', text: answerParts.join('') });
    const output = await tokensOf(secret, [answerParts.join('')]);
    await waitFor('both requests audited', async () => (await manage<{ data: AuditRow[] }>(`/keys/${id}/audit`)).data.length === 2);
    for (const row of (await manage<{ data: AuditRow[] }>(`/keys/${id}/audit`)).data) {
      expect(row).toMatchObject({ status: 200, output_tokens: output });
      expect(row.input_tokens).toBeGreaterThan(10);
    }
  });

  test('the native Responses lane: a completed stream without usage is charged the counted request and answer', async () => {
    const { id, secret } = await h.createKeyWithId();
    const answer = await fetch(`${h.gateway.url}/v1/native/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'native', stream: true, instructions: 'Be brief.', input: [{ role: 'user', content: question }] }),
    });
    expect(answer.status).toBe(200);
    const text = await answer.text();
    expect(text).toContain('response.completed');
    // The instructions, and the one input message with its framing.
    const input = (await tokensOf(secret, ['Be brief.', question])) + 3;
    const totals = JSON.parse(/: svc-totals (.*)/.exec(text)?.[1] ?? 'null') as { input_tokens: number; output_tokens: number } | null;
    expect(totals).toMatchObject({ input_tokens: input, output_tokens: await tokensOf(secret, [answerParts.join('')]) });
    await waitFor('the request audited', async () => (await manage<{ data: AuditRow[] }>(`/keys/${id}/audit`)).data.length === 1);
    const [row] = (await manage<{ data: AuditRow[] }>(`/keys/${id}/audit`)).data;
    expect(row).toMatchObject({ status: 200, input_tokens: totals?.input_tokens, output_tokens: totals?.output_tokens });
    expect(row?.cost_usd).toBeGreaterThan(0);
  });
});
