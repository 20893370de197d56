// Stream totals a client can read (docs/interfaces.md "Streaming"): besides the HTTP trailers,
// the call's tokens and exact cost ride in an `svc` object on the family's final usage event
// (the OpenAI usage chunk when include_usage was asked, the Anthropic message_delta) and in a
// final `: svc-totals {…}` SSE comment after the terminal frame, on every stream, the native
// lane's included. Checked through both official SDKs (their stream helpers still work) and raw
// HTTP, for every supplier protocol.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { request as httpRequest } from 'node:http';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';

interface Totals {
  input_tokens: number;
  output_tokens: number;
  cost_usd: string;
}

/** Prices per million tokens; the model id picks the supplier protocol. */
const models = {
  'gpt-x': { supplier: 'oa', protocol: 'openai', input: 1, output: 2 },
  'claude-x': { supplier: 'an', protocol: 'anthropic', input: 3, output: 15 },
  'resp-x': { supplier: 'rs', protocol: 'openai-responses', input: 0.5, output: 4 },
} as const;
type ModelId = keyof typeof models;
const modelIds = Object.keys(models) as ModelId[];

/** The totals' cost is an exact plain decimal and matches the catalogue prices. */
function expectCost(totals: Totals, model: ModelId): void {
  expect(totals.cost_usd).toMatch(/^\d+(\.\d+)?$/);
  const expected = (totals.input_tokens * models[model].input + totals.output_tokens * models[model].output) / 1e6;
  expect(Math.abs(Number(totals.cost_usd) - expected)).toBeLessThan(1e-12);
}

/** A raw streamed POST read to its end with node:http, so the trailers can be read too. */
function rawStream(url: string, key: string, body: unknown): Promise<{ text: string; trailers: NodeJS.Dict<string> }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ text, trailers: res.trailers }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

/** The SSE blocks of a stream; the last one must be the totals comment. */
function totalsComment(text: string): { before: string; totals: Totals } {
  const blocks = text.split('\n\n').filter((b) => b !== '');
  const last = blocks.at(-1)!;
  expect(last).toMatch(/^: svc-totals \{.*\}$/);
  return { before: blocks.at(-2)!, totals: JSON.parse(last.slice(': svc-totals '.length)) as Totals };
}

describe('stream totals for SDKs and browsers', () => {
  let h: GatewayHarness;
  let key: string;
  let openai: OpenAI;
  let anthropic: Anthropic;

  beforeAll(async () => {
    h = await startGatewayHarness(
      modelIds.map((id) => ({
        name: models[id].supplier,
        protocol: models[id].protocol,
        region: 'EU',
        models: [{ id, input_usd_per_mtok: models[id].input, output_usd_per_mtok: models[id].output }],
      })),
    );
    key = await h.createKey();
    openai = new OpenAI({ baseURL: `${h.gateway.url}/v1`, apiKey: key, maxRetries: 0 });
    anthropic = new Anthropic({ baseURL: h.gateway.url, apiKey: key, maxRetries: 0 });
  });
  afterAll(async () => {
    await h?.close();
  });

  for (const model of modelIds) {
    describe(`${model} (${models[model].protocol} supplier)`, () => {
      test('OpenAI SDK: the usage chunk carries svc; finalChatCompletion still works', async () => {
        const messages = [{ role: 'user' as const, content: `Totals please, ${model}` }];
        const stream = await openai.chat.completions.create({ model, messages, stream: true, stream_options: { include_usage: true } });
        let last: (OpenAI.Chat.Completions.ChatCompletionChunk & { svc?: Totals }) | undefined;
        for await (const chunk of stream) last = chunk;
        expect(last?.choices).toEqual([]);
        expect(last?.svc).toEqual({
          input_tokens: last!.usage!.prompt_tokens,
          output_tokens: last!.usage!.completion_tokens,
          cost_usd: last?.svc?.cost_usd,
        });
        expectCost(last!.svc!, model);

        const helper = openai.chat.completions.stream({ model, messages, stream_options: { include_usage: true } });
        const seen: Totals[] = [];
        helper.on('chunk', (chunk) => {
          const svc = (chunk as { svc?: Totals }).svc;
          if (svc) seen.push(svc);
        });
        const final = await helper.finalChatCompletion();
        expect(final.choices[0]!.message.content).toMatch(/^Simulated reply to:/);
        expect(final.usage?.prompt_tokens).toBe(last!.usage!.prompt_tokens);
        expect(seen).toEqual([last!.svc]);
      });

      test('OpenAI SDK without include_usage: no usage chunk, so no svc (the comment and trailers still have the totals)', async () => {
        const stream = await openai.chat.completions.create({ model, messages: [{ role: 'user', content: 'no usage' }], stream: true });
        for await (const chunk of stream) {
          expect(chunk.usage ?? undefined).toBeUndefined();
          expect((chunk as { svc?: unknown }).svc).toBeUndefined();
        }
      });

      test('Anthropic SDK: message_delta carries svc; finalMessage still works', async () => {
        const stream = anthropic.messages.stream({
          model,
          max_tokens: 200,
          messages: [{ role: 'user', content: `Totals please, ${model}` }],
        });
        const deltas: Totals[] = [];
        stream.on('streamEvent', (event) => {
          if (event.type === 'message_delta') deltas.push((event as unknown as { svc: Totals }).svc);
        });
        const final = await stream.finalMessage();
        expect(final.stop_reason).toBe('end_turn');
        expect(deltas).toHaveLength(1);
        const usage = final.usage;
        expect(deltas[0]).toEqual({
          input_tokens: usage.input_tokens + (usage.cache_read_input_tokens ?? 0) + (usage.cache_creation_input_tokens ?? 0),
          output_tokens: usage.output_tokens,
          cost_usd: deltas[0]!.cost_usd,
        });
        expectCost(deltas[0]!, model);
      });

      test('raw HTTP: a final svc-totals comment after the terminal frame, equal to the trailers', async () => {
        const chat = await rawStream(`${h.gateway.url}/v1/chat/completions`, key, {
          model,
          stream: true,
          stream_options: { include_usage: true },
          messages: [{ role: 'user', content: 'raw totals' }],
        });
        const fromChat = totalsComment(chat.text);
        expect(fromChat.before).toBe('data: [DONE]');
        const usageChunk = chat.text
          .split('\n\n')
          .filter((b) => b.startsWith('data: {'))
          .at(-1)!;
        expect((JSON.parse(usageChunk.slice('data: '.length)) as { svc: Totals }).svc).toEqual(fromChat.totals);
        expect(chat.trailers).toMatchObject({
          'x-svc-input-tokens': String(fromChat.totals.input_tokens),
          'x-svc-output-tokens': String(fromChat.totals.output_tokens),
          'x-svc-cost-usd': fromChat.totals.cost_usd,
        });
        expectCost(fromChat.totals, model);

        const messages = await rawStream(`${h.gateway.url}/v1/messages`, key, {
          model,
          max_tokens: 100,
          stream: true,
          messages: [{ role: 'user', content: 'raw totals' }],
        });
        const fromMessages = totalsComment(messages.text);
        expect(fromMessages.before).toMatch(/^event: message_stop\n/);
        expect(messages.trailers['x-svc-cost-usd']).toBe(fromMessages.totals.cost_usd);
        expectCost(fromMessages.totals, model);
      });
    });
  }

  test('a stream cut by its supplier ends with the error event, then the totals seen so far', async () => {
    // The Anthropic supplier reports input tokens in message_start, so they are known before the cut.
    const supplier = h.simulators.get(models['claude-x'].supplier)!;
    supplier.setFaults({ cutAfterEvents: 4 });
    try {
      const cut = await rawStream(`${h.gateway.url}/v1/messages`, key, {
        model: 'claude-x',
        max_tokens: 100,
        stream: true,
        messages: [{ role: 'user', content: 'cut me off' }],
      });
      const { before, totals } = totalsComment(cut.text);
      expect(before).toMatch(/^event: error\n/);
      expect(before).toContain('stream_interrupted');
      expect(totals.input_tokens).toBeGreaterThan(0);
      expect(cut.trailers['x-svc-input-tokens']).toBe(String(totals.input_tokens));
      expectCost(totals, 'claude-x');
    } finally {
      supplier.setFaults(undefined);
    }
  });

  test('native lane: the comment follows response.completed and matches its usage and the trailers', async () => {
    const native = await rawStream(`${h.gateway.url}/v1/native/responses`, key, {
      model: 'resp-x',
      stream: true,
      input: [{ role: 'user', content: 'native totals' }],
    });
    const { before, totals } = totalsComment(native.text);
    expect(before).toMatch(/^event: response\.completed\n/);
    const completed = JSON.parse(
      before
        .split('\n')
        .find((l) => l.startsWith('data: '))!
        .slice('data: '.length),
    ) as {
      response: { usage: { input_tokens: number; output_tokens: number } };
    };
    expect(totals.input_tokens).toBe(completed.response.usage.input_tokens);
    expect(totals.output_tokens).toBe(completed.response.usage.output_tokens);
    expect(native.trailers['x-svc-cost-usd']).toBe(totals.cost_usd);
    expectCost(totals, 'resp-x');
    // The OpenAI SDK's Responses stream helper ignores the comment.
    const client = new OpenAI({ baseURL: `${h.gateway.url}/v1/native`, apiKey: key, maxRetries: 0 });
    const final = await client.responses.stream({ model: 'resp-x', input: [{ role: 'user', content: 'native totals' }] }).finalResponse();
    expect(final.status).toBe('completed');
  });
});
