// The gateway driven by the official SDKs in every pairing of client family and supplier
// protocol: OpenAI client → openai / anthropic / openai-responses supplier, Anthropic client →
// anthropic / openai / openai-responses supplier. The model id picks the supplier (and so its protocol). Each scenario is written once,
// against a small family-neutral "driver" per SDK, and run for every pairing; what the simulator
// received upstream is checked against the supplier protocol's shape. Also: the native Responses
// lane through the OpenAI SDK, count_tokens, `auto` and models.list() through both SDKs.
import { afterAll, beforeAll, describe, test } from 'vitest';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import type { Message, MessageCreateParamsNonStreaming, MessageParam, Tool as AnthropicTool } from '@anthropic-ai/sdk/resources/messages';
import OpenAI from 'openai';
import type {
  ChatCompletion,
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import type { ResponseStreamEvent } from 'openai/resources/responses/responses';
import { replyText } from '../simulator/deterministic.js';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';

/** A valid 1×1 PNG (one transparent pixel). */
const PNG_1X1 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

/** Catalogue of the shared harness: the model id selects the supplier protocol. */
const models = {
  'gpt-x': { supplier: 'oa', protocol: 'openai', upstream: 'gpt-x-upstream', input: 0.1, output: 0.4 },
  'claude-x': { supplier: 'an', protocol: 'anthropic', upstream: 'claude-x-upstream', input: 0.15, output: 0.6 },
  'resp-x': { supplier: 'rs', protocol: 'openai-responses', upstream: 'resp-x-upstream', input: 0.3, output: 1.2 },
} as const;
type ModelId = keyof typeof models;

// ---------------------------------------------------------------------------------------------
// A family-neutral conversation, mapped by each driver onto its SDK's request and response.

interface ToolCall {
  id: string;
  name: string;
  input: unknown;
}
type Turn =
  | { role: 'user'; text: string; image?: string }
  | { role: 'assistant'; toolCalls: ToolCall[] }
  | { role: 'tool'; results: { id: string; content: string }[] };

interface Ask {
  model: string;
  system?: string;
  turns: Turn[];
  /** `required`: two tools, forced, parallel allowed (OpenAI `required`, Anthropic `any`); `auto`: same tools, model's choice. */
  tools?: 'required' | 'auto';
  maxTokens?: number;
  stop?: string[];
}

interface Reply {
  id: string;
  model: string;
  text: string;
  stop: string | null;
  usage: { input: number; output: number };
  toolCalls: ToolCall[];
  headers?: Headers;
}

interface Driver {
  family: 'openai' | 'anthropic';
  /** The family's stop/finish reason for a finished answer and for tool calls. */
  stops: { end: string; tools: string; length: string; stopSequence: string[] };
  plain(ask: Ask): Promise<Reply>;
  /** Streams through the SDK's own helper and returns its final accumulated answer. */
  stream(ask: Ask): Promise<Reply>;
}

const weatherSchema = { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] };
const timeSchema = { type: 'object' as const, properties: { tz: { type: 'string' } }, required: ['tz'] };
const expectedToolCalls = [
  { name: 'get_weather', input: { city: 'sim-city' } },
  { name: 'get_time', input: { tz: 'sim-tz' } },
];

const openAiTools: ChatCompletionTool[] = [
  { type: 'function', function: { name: 'get_weather', description: 'Weather in a city', parameters: weatherSchema } },
  { type: 'function', function: { name: 'get_time', description: 'Time in a zone', parameters: timeSchema } },
];
const anthropicTools: AnthropicTool[] = [
  { name: 'get_weather', description: 'Weather in a city', input_schema: weatherSchema },
  { name: 'get_time', description: 'Time in a zone', input_schema: timeSchema },
];

function openAiDriver(client: OpenAI): Driver {
  const params = (ask: Ask): Omit<ChatCompletionCreateParamsNonStreaming, 'stream'> => {
    const messages: ChatCompletionMessageParam[] = [];
    if (ask.system !== undefined) messages.push({ role: 'system', content: ask.system });
    for (const turn of ask.turns) {
      if (turn.role === 'user') {
        messages.push({
          role: 'user',
          content: turn.image
            ? [
                { type: 'text', text: turn.text },
                { type: 'image_url', image_url: { url: `data:image/png;base64,${turn.image}` } },
              ]
            : turn.text,
        });
      } else if (turn.role === 'assistant') {
        messages.push({
          role: 'assistant',
          content: null,
          tool_calls: turn.toolCalls.map((c) => ({
            id: c.id,
            type: 'function' as const,
            function: { name: c.name, arguments: JSON.stringify(c.input) },
          })),
        });
      } else {
        for (const r of turn.results) messages.push({ role: 'tool', tool_call_id: r.id, content: r.content });
      }
    }
    return {
      model: ask.model,
      messages,
      ...(ask.tools && { tools: openAiTools, tool_choice: ask.tools, parallel_tool_calls: true }),
      ...(ask.maxTokens !== undefined && { max_completion_tokens: ask.maxTokens }),
      ...(ask.stop && { stop: ask.stop }),
    };
  };
  const reply = (c: ChatCompletion, headers?: Headers): Reply => {
    assert.equal(c.object, 'chat.completion');
    assert.match(c.id, /^chatcmpl-/);
    assert.equal(c.choices.length, 1);
    const choice = c.choices[0]!;
    assert.equal(choice.message.role, 'assistant');
    assert.ok(c.usage, 'usage is reported');
    assert.equal(c.usage.total_tokens, c.usage.prompt_tokens + c.usage.completion_tokens);
    return {
      id: c.id,
      model: c.model,
      text: choice.message.content ?? '',
      stop: choice.finish_reason,
      usage: { input: c.usage.prompt_tokens, output: c.usage.completion_tokens },
      toolCalls: (choice.message.tool_calls ?? []).map((tc) => {
        assert.equal(tc.type, 'function');
        if (tc.type !== 'function') throw new Error('unexpected custom tool call');
        return { id: tc.id, name: tc.function.name, input: JSON.parse(tc.function.arguments) as unknown };
      }),
      ...(headers && { headers }),
    };
  };
  return {
    family: 'openai',
    stops: { end: 'stop', tools: 'tool_calls', length: 'length', stopSequence: ['stop'] },
    async plain(ask) {
      const { data, response } = await client.chat.completions.create(params(ask)).withResponse();
      return reply(data, response.headers);
    },
    async stream(ask) {
      const stream = client.chat.completions.stream({ ...params(ask), stream_options: { include_usage: true } });
      const chunks: { id: string; object: string; model: string }[] = [];
      stream.on('chunk', (chunk) => chunks.push(chunk));
      const final = await stream.finalChatCompletion();
      // Every chunk repeats the same id, the chunk object name and the public model id.
      assert.ok(chunks.length > 2, `${chunks.length} chunks`);
      assert.deepEqual(new Set(chunks.map((c) => c.id)), new Set([final.id]));
      assert.deepEqual(new Set(chunks.map((c) => c.object)), new Set(['chat.completion.chunk']));
      assert.deepEqual(new Set(chunks.map((c) => c.model)), new Set([ask.model]));
      return reply(final);
    },
  };
}

function anthropicDriver(client: Anthropic): Driver {
  const params = (ask: Ask): MessageCreateParamsNonStreaming => {
    const messages: MessageParam[] = ask.turns.map((turn): MessageParam => {
      if (turn.role === 'user') {
        return {
          role: 'user',
          content: turn.image
            ? [
                { type: 'image', source: { type: 'base64', media_type: 'image/png', data: turn.image } },
                { type: 'text', text: turn.text },
              ]
            : turn.text,
        };
      }
      if (turn.role === 'assistant') {
        return {
          role: 'assistant',
          content: turn.toolCalls.map((c) => ({ type: 'tool_use' as const, id: c.id, name: c.name, input: c.input })),
        };
      }
      return { role: 'user', content: turn.results.map((r) => ({ type: 'tool_result' as const, tool_use_id: r.id, content: r.content })) };
    });
    return {
      model: ask.model,
      max_tokens: ask.maxTokens ?? 512,
      messages,
      ...(ask.stop && { stop_sequences: ask.stop }),
      ...(ask.system !== undefined && { system: ask.system }),
      ...(ask.tools && { tools: anthropicTools, tool_choice: { type: ask.tools === 'required' ? ('any' as const) : ('auto' as const) } }),
    };
  };
  const reply = (m: Message, headers?: Headers): Reply => {
    assert.equal(m.type, 'message');
    assert.equal(m.role, 'assistant');
    assert.match(m.id, /^msg_/);
    return {
      id: m.id,
      model: m.model,
      text: m.content.map((b) => (b.type === 'text' ? b.text : '')).join(''),
      stop: m.stop_reason,
      usage: { input: m.usage.input_tokens, output: m.usage.output_tokens },
      toolCalls: m.content.flatMap((b) => (b.type === 'tool_use' ? [{ id: b.id, name: b.name, input: b.input }] : [])),
      ...(headers && { headers }),
    };
  };
  return {
    family: 'anthropic',
    // An OpenAI supplier does not say which sequence stopped it, so end_turn is acceptable there.
    stops: { end: 'end_turn', tools: 'tool_use', length: 'max_tokens', stopSequence: ['stop_sequence', 'end_turn'] },
    async plain(ask) {
      const { data, response } = await client.messages.create(params(ask)).withResponse();
      return reply(data, response.headers);
    },
    async stream(ask) {
      const stream = client.messages.stream(params(ask));
      const types: string[] = [];
      stream.on('streamEvent', (event) => types.push(event.type));
      const final = await stream.finalMessage();
      // The full Anthropic event sequence: start, blocks (each started and stopped), delta, stop.
      assert.equal(types[0], 'message_start');
      assert.deepEqual(types.slice(-2), ['message_delta', 'message_stop']);
      const starts = types.filter((t) => t === 'content_block_start').length;
      assert.equal(starts, final.content.length);
      assert.equal(types.filter((t) => t === 'content_block_stop').length, starts);
      return reply(final);
    },
  };
}

// ---------------------------------------------------------------------------------------------
// What the supplier received, read in the supplier protocol's own shape.

type Json = Record<string, unknown>;
const asJson = (v: unknown): Json => {
  assert.ok(v !== null && typeof v === 'object' && !Array.isArray(v), `expected an object, got ${JSON.stringify(v)}`);
  return v as Json;
};
const list = (v: unknown): Json[] => {
  assert.ok(Array.isArray(v), `expected a list, got ${JSON.stringify(v)}`);
  return v.map(asJson);
};
/** Text of a string or of text blocks/parts. */
const textOf = (content: unknown): string =>
  typeof content === 'string'
    ? content
    : list(content)
        .map((b) => (b.type === 'text' && typeof b.text === 'string' ? b.text : ''))
        .join('');

interface Pairing {
  title: string;
  client: 'openai' | 'anthropic';
  model: 'gpt-x' | 'claude-x' | 'resp-x';
}

const pairings: Pairing[] = [
  { title: 'OpenAI client → openai supplier (passthrough)', client: 'openai', model: 'gpt-x' },
  { title: 'OpenAI client → anthropic supplier (translated)', client: 'openai', model: 'claude-x' },
  { title: 'Anthropic client → anthropic supplier (passthrough)', client: 'anthropic', model: 'claude-x' },
  { title: 'Anthropic client → openai supplier (translated)', client: 'anthropic', model: 'gpt-x' },
  { title: 'OpenAI client → openai-responses supplier (bridged to the Responses API)', client: 'openai', model: 'resp-x' },
  { title: 'Anthropic client → openai-responses supplier (translated and bridged)', client: 'anthropic', model: 'resp-x' },
];

describe('official SDKs through the gateway, every client/supplier pairing', () => {
  let h: GatewayHarness;
  let key: string;
  let openai: OpenAI;
  let anthropic: Anthropic;
  const drivers = {} as Record<'openai' | 'anthropic', Driver>;

  beforeAll(async () => {
    h = await startGatewayHarness(
      (Object.entries(models) as [ModelId, (typeof models)[ModelId]][]).map(([id, m]) => ({
        name: m.supplier,
        protocol: m.protocol,
        region: 'EU',
        models: [{ id, upstream: m.upstream, input_usd_per_mtok: m.input, output_usd_per_mtok: m.output }],
      })),
    );
    key = await h.createKey();
    openai = new OpenAI({ baseURL: `${h.gateway.url}/v1`, apiKey: key, maxRetries: 0 });
    anthropic = new Anthropic({ baseURL: h.gateway.url, apiKey: key, maxRetries: 0 });
    drivers.openai = openAiDriver(openai);
    drivers.anthropic = anthropicDriver(anthropic);
  });
  afterAll(async () => {
    await h.close();
  });

  /** The body the model's supplier got on its last call. */
  const upstream = (model: ModelId): Json => {
    const seen = h.simulators.get(models[model].supplier)!.requests.at(-1);
    assert.ok(seen, `supplier ${models[model].supplier} was called`);
    return asJson(seen.body);
  };
  const upstreamPath = (model: ModelId): string => h.simulators.get(models[model].supplier)!.requests.at(-1)!.path;

  /** Routing headers of a non-streamed answer: who, where, and tokens/cost matching the body. */
  const assertRouting = (reply: Reply, model: ModelId) => {
    const headers = reply.headers!;
    const m = models[model];
    assert.equal(headers.get('x-svc-supplier'), m.supplier);
    assert.equal(headers.get('x-svc-region'), 'EU');
    assert.equal(headers.get('x-svc-failover'), 'false');
    assert.equal(headers.get('x-svc-model'), model);
    assert.match(headers.get('x-svc-latency-ms') ?? '', /^\d+$/);
    assert.equal(headers.get('x-svc-input-tokens'), String(reply.usage.input));
    assert.equal(headers.get('x-svc-output-tokens'), String(reply.usage.output));
    const cost = Number(headers.get('x-svc-cost-usd'));
    const expected = (reply.usage.input * m.input + reply.usage.output * m.output) / 1e6;
    assert.ok(Math.abs(cost - expected) < 1e-9, `x-svc-cost-usd ${headers.get('x-svc-cost-usd')} vs ${expected}`);
  };

  for (const p of pairings) {
    describe(p.title, () => {
      const driver = () => drivers[p.client];
      const protocol = models[p.model].protocol;

      test('plain request: text, usage, stop reason, routing headers, public model id; upstream got the upstream id', async () => {
        const prompt = `Hello gateway, this is the ${p.client} client asking ${p.model}`;
        const reply = await driver().plain({ model: p.model, turns: [{ role: 'user', text: prompt }] });
        assert.equal(reply.text, replyText(prompt));
        assert.equal(reply.stop, driver().stops.end);
        assert.equal(reply.model, p.model);
        assert.ok(reply.usage.input > 0 && reply.usage.output > 0, JSON.stringify(reply.usage));
        assert.deepEqual(reply.toolCalls, []);
        assertRouting(reply, p.model);

        const body = upstream(p.model);
        assert.equal(body.model, models[p.model].upstream);
        assert.equal(body.region, undefined);
        if (protocol === 'anthropic') {
          assert.equal(upstreamPath(p.model), '/v1/messages');
          assert.ok(Number.isInteger(body.max_tokens) && (body.max_tokens as number) > 0, `max_tokens ${String(body.max_tokens)}`);
          assert.deepEqual(
            list(body.messages).map((m) => [m.role, textOf(m.content)]),
            [['user', prompt]],
          );
        } else if (protocol === 'openai-responses') {
          assert.equal(upstreamPath(p.model), '/v1/responses');
          assert.deepEqual(
            list(body.input).map((m) => [m.role, textOf(m.content)]),
            [['user', prompt]],
          );
          assert.equal(body.store, false, 'chat requests are not stored by the Responses supplier');
          if (p.client === 'anthropic') assert.equal(body.max_output_tokens, 512);
        } else {
          assert.equal(upstreamPath(p.model), '/v1/chat/completions');
          assert.deepEqual(
            list(body.messages).map((m) => [m.role, textOf(m.content)]),
            [['user', prompt]],
          );
          if (p.client === 'anthropic') assert.equal(body.max_completion_tokens ?? body.max_tokens, 512);
        }
      });

      test('streaming through the SDK helper gives the same text and usage as the plain request', async () => {
        const ask: Ask = { model: p.model, turns: [{ role: 'user', text: `Please stream a reply about rivers and lakes for ${p.title}` }] };
        const plain = await driver().plain(ask);
        const streamed = await driver().stream(ask);
        assert.equal(streamed.text, plain.text);
        assert.ok(streamed.text.length > 0);
        assert.equal(streamed.stop, driver().stops.end);
        assert.equal(streamed.model, p.model);
        assert.deepEqual(streamed.usage, plain.usage);
        const body = upstream(p.model);
        assert.equal(body.stream, true);
        // Usage must be asked for upstream, or the translated stream could not report it.
        if (protocol === 'openai') assert.equal(asJson(body.stream_options).include_usage, true);
      });

      test('tools: two parallel calls (plain and streamed), mapped tool definitions and tool choice upstream', async () => {
        const ask: Ask = { model: p.model, tools: 'required', turns: [{ role: 'user', text: 'Weather and time in Paris?' }] };
        const plain = await driver().plain(ask);
        assert.equal(plain.stop, driver().stops.tools);
        assert.deepEqual(
          plain.toolCalls.map(({ name, input }) => ({ name, input })),
          expectedToolCalls,
        );
        assert.equal(new Set(plain.toolCalls.map((c) => c.id)).size, 2, 'distinct tool call ids');
        for (const c of plain.toolCalls) assert.match(c.id, /^[a-zA-Z0-9_-]+$/);

        const body = upstream(p.model);
        if (protocol === 'anthropic') {
          assert.deepEqual(
            list(body.tools).map((t) => [t.name, t.input_schema]),
            [
              ['get_weather', weatherSchema],
              ['get_time', timeSchema],
            ],
          );
          assert.equal(asJson(body.tool_choice).type, 'any');
          assert.notEqual(asJson(body.tool_choice).disable_parallel_tool_use, true);
        } else if (protocol === 'openai-responses') {
          assert.deepEqual(
            list(body.tools).map((t) => [t.type, t.name, t.parameters, t.strict]),
            [
              ['function', 'get_weather', weatherSchema, false],
              ['function', 'get_time', timeSchema, false],
            ],
          );
          assert.equal(body.tool_choice, 'required');
          assert.notEqual(body.parallel_tool_calls, false);
        } else {
          assert.deepEqual(
            list(body.tools).map((t) => [t.type, asJson(t.function).name, asJson(t.function).parameters]),
            [
              ['function', 'get_weather', weatherSchema],
              ['function', 'get_time', timeSchema],
            ],
          );
          assert.equal(body.tool_choice, 'required');
          assert.notEqual(body.parallel_tool_calls, false);
        }

        const streamed = await driver().stream(ask);
        assert.equal(streamed.stop, driver().stops.tools);
        assert.deepEqual(
          streamed.toolCalls.map(({ name, input }) => ({ name, input })),
          expectedToolCalls,
        );
        assert.equal(streamed.text, '');
      });

      test('tool-result round trip: the results go back and a text answer comes out', async () => {
        const question: Turn = { role: 'user', text: 'Weather and time in Oslo?' };
        const first = await driver().plain({ model: p.model, tools: 'required', turns: [question] });
        assert.equal(first.toolCalls.length, 2);
        const results = first.toolCalls.map((c) => ({ id: c.id, content: c.name === 'get_weather' ? 'Sunny, 21 C' : '14:05 CET' }));
        const ask: Ask = {
          model: p.model,
          tools: 'auto',
          turns: [question, { role: 'assistant', toolCalls: first.toolCalls }, { role: 'tool', results }],
        };
        const answer = await driver().plain(ask);
        assert.equal(answer.stop, driver().stops.end);
        assert.deepEqual(answer.toolCalls, []);
        assert.match(answer.text, /^Simulated reply to: /);

        if (protocol === 'openai-responses') {
          const input = list(upstream(p.model).input);
          assert.deepEqual(
            input.map((item) => item.type ?? item.role),
            ['user', 'function_call', 'function_call', 'function_call_output', 'function_call_output'],
          );
          const calls = input.filter((item) => item.type === 'function_call');
          assert.deepEqual(
            calls.map((c) => [c.name, JSON.parse(c.arguments as string)]),
            expectedToolCalls.map((c) => [c.name, c.input]),
          );
          const outputs = input.filter((item) => item.type === 'function_call_output');
          assert.deepEqual(
            outputs.map((o) => o.call_id),
            calls.map((c) => c.call_id),
          );
          assert.deepEqual(
            outputs.map((o) => o.output),
            results.map((r) => r.content),
          );
          return;
        }
        const messages = list(upstream(p.model).messages);
        if (protocol === 'anthropic') {
          assert.deepEqual(
            messages.map((m) => m.role),
            ['user', 'assistant', 'user'],
          );
          const uses = list(messages[1]!.content).filter((b) => b.type === 'tool_use');
          assert.deepEqual(
            uses.map((b) => [b.name, b.input]),
            expectedToolCalls.map((c) => [c.name, c.input]),
          );
          const resultBlocks = list(messages[2]!.content);
          assert.deepEqual(
            resultBlocks.map((b) => b.type),
            ['tool_result', 'tool_result'],
          );
          assert.deepEqual(
            resultBlocks.map((b) => b.tool_use_id),
            uses.map((b) => b.id),
          );
          assert.deepEqual(
            resultBlocks.map((b) => textOf(b.content)),
            results.map((r) => r.content),
          );
        } else {
          assert.deepEqual(
            messages.map((m) => m.role),
            ['user', 'assistant', 'tool', 'tool'],
          );
          const calls = list(messages[1]!.tool_calls);
          assert.deepEqual(
            calls.map((c) => [asJson(c.function).name, JSON.parse(asJson(c.function).arguments as string)]),
            expectedToolCalls.map((c) => [c.name, c.input]),
          );
          assert.deepEqual(
            messages.slice(2).map((m) => m.tool_call_id),
            calls.map((c) => c.id),
          );
          assert.deepEqual(
            messages.slice(2).map((m) => textOf(m.content)),
            results.map((r) => r.content),
          );
        }
      });

      test('limits: max tokens gives the length stop reason, a stop sequence cuts the text', async () => {
        const prompt = 'Write a very long essay about mountains';
        const short = await driver().plain({ model: p.model, maxTokens: 2, turns: [{ role: 'user', text: prompt }] });
        assert.equal(short.stop, driver().stops.length);
        assert.equal(short.text, replyText(prompt).slice(0, 8));
        const body = upstream(p.model);
        assert.equal(body.max_tokens ?? body.max_completion_tokens ?? body.max_output_tokens, 2);

        if (protocol === 'openai-responses') {
          // The Responses API has no stop sequences: refused, naming the client's own field.
          await assert.rejects(
            driver().plain({ model: p.model, stop: ['reply'], turns: [{ role: 'user', text: prompt }] }),
            (error: unknown) => {
              // The OpenAI SDK keeps the body's `error` object, the Anthropic SDK the whole body.
              const e = error as { status?: number; error?: { code?: string; param?: string; error?: { code?: string; param?: string } } };
              const body = p.client === 'anthropic' ? e.error?.error : e.error;
              assert.equal(e.status, 400);
              assert.equal(body?.code, 'unsupported_parameter');
              assert.equal(body?.param, p.client === 'anthropic' ? 'stop_sequences' : 'stop');
              return true;
            },
          );
          return;
        }
        const stopped = await driver().plain({ model: p.model, stop: ['reply'], turns: [{ role: 'user', text: prompt }] });
        assert.equal(stopped.text, 'Simulated ');
        assert.ok(driver().stops.stopSequence.includes(stopped.stop ?? ''), `stop reason ${stopped.stop}`);
        const sent = upstream(p.model);
        assert.deepEqual(protocol === 'anthropic' ? sent.stop_sequences : [sent.stop].flat(), ['reply']);
      });

      test('an image is accepted and converted to the supplier format', async () => {
        const text = 'What is in this picture?';
        const reply = await driver().plain({ model: p.model, turns: [{ role: 'user', text, image: PNG_1X1 }] });
        assert.equal(reply.text, replyText(text));
        assert.equal(reply.stop, driver().stops.end);
        if (protocol === 'openai-responses') {
          const parts = list(list(upstream(p.model).input)[0]!.content);
          const image = parts.find((b) => b.type === 'input_image');
          assert.ok(image, JSON.stringify(parts));
          assert.equal(image.image_url, `data:image/png;base64,${PNG_1X1}`);
          assert.equal(parts.map((b) => (b.type === 'input_text' ? b.text : '')).join(''), text);
          return;
        }
        const content = list(list(upstream(p.model).messages)[0]!.content);
        if (protocol === 'anthropic') {
          const image = content.find((b) => b.type === 'image');
          assert.ok(image, JSON.stringify(content));
          assert.deepEqual(image.source, { type: 'base64', media_type: 'image/png', data: PNG_1X1 });
        } else {
          const image = content.find((b) => b.type === 'image_url');
          assert.ok(image, JSON.stringify(content));
          assert.equal(asJson(image.image_url).url, `data:image/png;base64,${PNG_1X1}`);
        }
        assert.equal(textOf(content), text);
      });

      test('a system prompt reaches the supplier in its own place', async () => {
        const system = 'You are a terse assistant that answers in one line.';
        const prompt = 'Tell me about the sea';
        const reply = await driver().plain({ model: p.model, system, turns: [{ role: 'user', text: prompt }] });
        assert.equal(reply.text, replyText(prompt));
        const body = upstream(p.model);
        if (protocol === 'openai-responses') {
          assert.equal(body.instructions, system);
          assert.deepEqual(
            list(body.input).map((m) => m.role),
            ['user'],
          );
          return;
        }
        const messages = list(body.messages);
        if (protocol === 'anthropic') {
          assert.equal(textOf(body.system), system);
          assert.deepEqual(
            messages.map((m) => m.role),
            ['user'],
          );
        } else {
          assert.equal(body.system, undefined);
          assert.deepEqual(
            messages.map((m) => [m.role, textOf(m.content)]),
            [
              ['system', system],
              ['user', prompt],
            ],
          );
        }
      });

      // Anthropic's structured output: a JSON schema in output_config.format, whatever the supplier's protocol.
      if (p.client === 'anthropic') {
        test('structured output: output_config.format gives JSON following the schema (plain and streamed)', async () => {
          const schema = {
            type: 'object',
            properties: { city: { type: 'string' }, celsius: { type: 'number' } },
            required: ['city', 'celsius'],
            additionalProperties: false,
          };
          const request = {
            model: p.model,
            max_tokens: 256,
            messages: [{ role: 'user' as const, content: 'Give me the weather as JSON' }],
            output_config: { format: { type: 'json_schema' as const, schema } },
          };
          const plain = await anthropic.messages.create(request);
          assert.equal(plain.stop_reason, 'end_turn');
          const text = plain.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
          const parsed = JSON.parse(text) as { city: unknown; celsius: unknown };
          assert.equal(typeof parsed.city, 'string');
          assert.equal(typeof parsed.celsius, 'number');
          const streamed = await anthropic.messages.stream(request).finalMessage();
          assert.deepEqual(JSON.parse(streamed.content.map((b) => (b.type === 'text' ? b.text : '')).join('')), parsed);
        });
      }

      // JSON mode (response_format) is the chat-completions interface's.
      if (p.client === 'openai') {
        test('JSON mode: json_object and json_schema (plain and streamed) give parseable JSON', async () => {
          const messages: ChatCompletionMessageParam[] = [{ role: 'user', content: 'Give me the weather as JSON' }];
          const object = await openai.chat.completions.create({ model: p.model, messages, response_format: { type: 'json_object' } });
          assert.equal(object.choices[0]!.finish_reason, 'stop');
          const parsedObject = JSON.parse(object.choices[0]!.message.content ?? '') as unknown;
          assert.ok(
            parsedObject !== null && typeof parsedObject === 'object' && !Array.isArray(parsedObject),
            String(object.choices[0]!.message.content),
          );
          assert.equal(object.choices[0]!.message.tool_calls ?? undefined, undefined);

          const schema = {
            type: 'object',
            properties: { city: { type: 'string' }, celsius: { type: 'number' } },
            required: ['city', 'celsius'],
            additionalProperties: false,
          };
          const format = { type: 'json_schema' as const, json_schema: { name: 'weather', schema, strict: true } };
          const plain = await openai.chat.completions.create({ model: p.model, messages, response_format: format });
          assert.equal(plain.choices[0]!.finish_reason, 'stop');
          assert.equal(plain.choices[0]!.message.tool_calls ?? undefined, undefined);
          const parsed = JSON.parse(plain.choices[0]!.message.content ?? '') as { city: unknown; celsius: unknown };
          assert.equal(typeof parsed.city, 'string');
          assert.equal(typeof parsed.celsius, 'number');

          const streamed = await openai.chat.completions
            .stream({ model: p.model, messages, response_format: format })
            .finalChatCompletion();
          assert.equal(streamed.choices[0]!.finish_reason, 'stop');
          assert.deepEqual(JSON.parse(streamed.choices[0]!.message.content ?? ''), parsed);
        });
      }
    });
  }

  test('native lane: OpenAI SDK Responses streaming against an openai-responses supplier', async () => {
    const native = new OpenAI({ baseURL: `${h.gateway.url}/v1/native`, apiKey: key, maxRetries: 0 });
    const prompt = 'hi from the native lane';
    const stream = native.responses.stream({ model: 'resp-x', input: [{ role: 'user', content: prompt }] });
    const events: ResponseStreamEvent[] = [];
    stream.on('event', (event) => events.push(event));
    const final = await stream.finalResponse();

    assert.ok(events.length > 5, `${events.length} events`);
    assert.equal(events[0]!.type, 'response.created');
    assert.equal(events.at(-1)!.type, 'response.completed');
    const seq = events.map((e) => e.sequence_number);
    for (let i = 1; i < seq.length; i++) assert.ok(seq[i]! > seq[i - 1]!, `sequence_number increases: ${seq.join(',')}`);
    const kinds = events.map((e) => e.type).filter((t, i, all) => t !== 'response.output_text.delta' || all[i - 1] !== t);
    assert.deepEqual(kinds, [
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    assert.equal(final.status, 'completed');
    assert.equal(final.output_text, replyText(prompt));
    assert.ok(final.usage && final.usage.input_tokens > 0 && final.usage.output_tokens > 0);
    assert.equal(final.usage.total_tokens, final.usage.input_tokens + final.usage.output_tokens);

    const seen = h.simulators.get('rs')!.requests.at(-1)!;
    assert.equal(seen.path, '/v1/responses');
    assert.equal(asJson(seen.body).model, 'resp-x-upstream');
    assert.equal(asJson(seen.body).stream, true);

    // The gateway's own metadata keys stay at the gateway, as on the chat lanes; the rest goes on.
    const tagged = native.responses.stream({
      model: 'resp-x',
      input: [{ role: 'user', content: prompt }],
      metadata: { session_id: 's-1', sticky_key: 'k-1', team: 'blue' },
    });
    await tagged.finalResponse();
    assert.deepEqual(asJson(h.simulators.get('rs')!.requests.at(-1)!.body).metadata, { team: 'blue' });
    await native.responses
      .stream({ model: 'resp-x', input: [{ role: 'user', content: prompt }], metadata: { session_id: 's-1' } })
      .finalResponse();
    assert.equal(asJson(h.simulators.get('rs')!.requests.at(-1)!.body).metadata, undefined);
  });

  test('count_tokens: native for an anthropic-protocol model, a local count for an openai-protocol model', async () => {
    const messages: MessageParam[] = [{ role: 'user', content: 'How many tokens is this short question?' }];
    const { data: native, response } = await anthropic.messages
      .countTokens({ model: 'claude-x', system: 'Be brief.', messages })
      .withResponse();
    const seen = h.simulators.get('an')!.requests.at(-1)!;
    assert.equal(seen.path, '/v1/messages/count_tokens');
    assert.equal(asJson(seen.body).model, 'claude-x-upstream');
    const direct = await new Anthropic({ baseURL: h.simulators.get('an')!.url, apiKey: 'x', maxRetries: 0 }).messages.countTokens({
      model: 'claude-x-upstream',
      system: 'Be brief.',
      messages,
    });
    assert.equal(native.input_tokens, direct.input_tokens);
    assert.equal(response.headers.get('x-svc-model'), 'claude-x');

    const oaCalls = h.simulators.get('oa')!.requests.length;
    const short = await anthropic.messages.countTokens({ model: 'gpt-x', messages });
    const long = await anthropic.messages.countTokens({
      model: 'gpt-x',
      messages: [{ role: 'user', content: 'How many tokens is this short question? '.repeat(20) }],
    });
    assert.ok(Number.isInteger(short.input_tokens) && short.input_tokens > 0, String(short.input_tokens));
    assert.ok(long.input_tokens > short.input_tokens, `${long.input_tokens} > ${short.input_tokens}`);
    assert.equal(h.simulators.get('oa')!.requests.length, oaCalls, 'the openai supplier is not asked to count');
  });

  test('auto through both SDKs: the cheapest catalogue chat model, reported in the body and x-svc-model', async () => {
    const { data: chat, response: chatResponse } = await openai.chat.completions
      .create({ model: 'auto', messages: [{ role: 'user', content: 'pick for me' }] })
      .withResponse();
    assert.ok(Object.keys(models).includes(chat.model), chat.model);
    assert.equal(chat.model, 'gpt-x', 'gpt-x is the cheapest model chat can use');
    assert.equal(chatResponse.headers.get('x-svc-model'), chat.model);
    assert.equal(chatResponse.headers.get('x-svc-supplier'), models[chat.model as ModelId].supplier);
    assert.equal(chat.choices[0]!.message.content, replyText('pick for me'));

    const { data: message, response: messageResponse } = await anthropic.messages
      .create({ model: 'auto', max_tokens: 100, messages: [{ role: 'user', content: 'pick for me too' }] })
      .withResponse();
    assert.ok(Object.keys(models).includes(message.model), message.model);
    assert.equal(message.model, 'gpt-x');
    assert.equal(messageResponse.headers.get('x-svc-model'), message.model);
    assert.equal(messageResponse.headers.get('x-svc-supplier'), models[message.model as ModelId].supplier);
    assert.deepEqual(message.content, [{ type: 'text', text: replyText('pick for me too') }]);

    const streamed = await anthropic.messages
      .stream({ model: 'auto', max_tokens: 100, messages: [{ role: 'user', content: 'pick for me too' }] })
      .finalMessage();
    assert.equal(streamed.model, 'gpt-x');
    assert.deepEqual(streamed.content, message.content);
  });

  test('models.list() through both SDKs lists the catalogue and auto', async () => {
    const expected = ['auto', ...Object.keys(models)].sort();
    const openAiIds: string[] = [];
    for await (const model of openai.models.list()) {
      assert.equal(model.object, 'model');
      openAiIds.push(model.id);
    }
    assert.deepEqual(openAiIds.sort(), expected);
    const anthropicIds: string[] = [];
    for await (const model of anthropic.models.list()) {
      assert.equal(model.type, 'model');
      assert.ok(!Number.isNaN(Date.parse(model.created_at)));
      anthropicIds.push(model.id);
    }
    assert.deepEqual(anthropicIds.sort(), expected);
  });

  test("the Anthropic SDK pages the list as Anthropic's API does: limit, after_id, before_id, has_more", async () => {
    const all: string[] = [];
    for await (const model of anthropic.models.list({ limit: 1 })) all.push(model.id);
    assert.equal(all.length, Object.keys(models).length + 1);
    const first = await anthropic.models.list({ limit: 2 });
    assert.deepEqual(
      first.data.map((m) => m.id),
      all.slice(0, 2),
    );
    assert.equal(first.has_more, all.length > 2);
    const next = await anthropic.models.list({ limit: 2, after_id: all[1] });
    assert.deepEqual(
      next.data.map((m) => m.id),
      all.slice(2, 4),
    );
    const before = await anthropic.models.list({ limit: 5, before_id: all[2] });
    assert.deepEqual(
      before.data.map((m) => m.id),
      all.slice(0, 2),
    );
    assert.equal(before.has_more, false);
    await assert.rejects(anthropic.models.list({ limit: 0 }), Anthropic.BadRequestError);
    await assert.rejects(anthropic.models.list({ after_id: 'no-such-model' }), Anthropic.BadRequestError);
  });

  test('models.retrieve() through both SDKs, and an unknown id is their NotFoundError', async () => {
    const viaOpenAi = await openai.models.retrieve('claude-x');
    assert.equal(viaOpenAi.id, 'claude-x');
    assert.equal(viaOpenAi.object, 'model');
    const viaAnthropic = await anthropic.models.retrieve('gpt-x');
    assert.equal(viaAnthropic.id, 'gpt-x');
    assert.equal(viaAnthropic.type, 'model');
    await assert.rejects(openai.models.retrieve('no-such-model'), OpenAI.NotFoundError);
    await assert.rejects(anthropic.models.retrieve('no-such-model'), Anthropic.NotFoundError);
  });

  test('tools Anthropic defines (web search) and adaptive thinking reach an Anthropic supplier as sent, and are refused by name elsewhere', async () => {
    const webSearch = { type: 'web_search_20250305', name: 'web_search', max_uses: 2 };
    const native = {
      max_tokens: 50,
      messages: [{ role: 'user' as const, content: 'What happened today?' }],
      tools: [webSearch],
      thinking: { type: 'adaptive' },
    };
    const sim = h.simulators.get('an')!;
    const before = sim.requests.length;
    const message = await anthropic.messages.create({ model: 'claude-x', ...native } as never);
    assert.equal((message as { type: string }).type, 'message');
    const sent = sim.requests.slice(before).find((r) => r.path.endsWith('/messages'))!.body as { tools: unknown[]; thinking: unknown };
    assert.deepEqual(sent.tools, [webSearch]);
    assert.deepEqual(sent.thinking, { type: 'adaptive' });
    const refused = await anthropic.messages.create({ model: 'gpt-x', ...native } as never).then(
      () => undefined,
      (e: unknown) => e as InstanceType<typeof Anthropic.APIError>,
    );
    assert.equal(refused?.status, 400);
    assert.equal((refused?.error as { error?: { code?: string; param?: string } }).error?.code, 'unsupported_parameter');
    assert.equal((refused?.error as { error?: { param?: string } }).error?.param, 'tools[0]');
  });

  test("a history with Anthropic's server-tool blocks reaches an Anthropic supplier as sent; search results become text elsewhere", async () => {
    // What a web-search reply gives back, and the client sends again with its next question.
    const searched = [
      { type: 'server_tool_use', id: 'srvtoolu_01', name: 'web_search', input: { query: 'weather Paris' } },
      {
        type: 'web_search_tool_result',
        tool_use_id: 'srvtoolu_01',
        content: [{ type: 'web_search_result', url: 'https://example.com/w', title: 'Weather', encrypted_content: 'abc', page_age: null }],
      },
      { type: 'text', text: 'It is sunny.' },
    ];
    const searchResult = {
      type: 'search_result',
      source: 'https://example.com/kb/1',
      title: 'Opening hours',
      content: [{ type: 'text', text: 'Open 9 to 5.' }],
    };
    const history = [
      { role: 'user' as const, content: 'Weather in Paris?' },
      { role: 'assistant' as const, content: searched },
      { role: 'user' as const, content: [searchResult, { type: 'text', text: 'And when is the shop open?' }] },
    ];
    const sim = h.simulators.get('an')!;
    const before = sim.requests.length;
    const message = await anthropic.messages.create({ model: 'claude-x', max_tokens: 50, messages: history } as never);
    assert.equal((message as { type: string }).type, 'message');
    const sent = sim.requests.slice(before).find((r) => r.path.endsWith('/messages'))!.body as { messages: unknown[] };
    assert.deepEqual(sent.messages, history);

    // Toward an OpenAI supplier the server tool's blocks cannot be read: refused, naming the block.
    const refused = await anthropic.messages.create({ model: 'gpt-x', max_tokens: 50, messages: history } as never).then(
      () => undefined,
      (e: unknown) => e as InstanceType<typeof Anthropic.APIError>,
    );
    assert.equal(refused?.status, 400);
    const error = (refused?.error as { error?: { code?: string; param?: string } }).error;
    assert.equal(error?.code, 'unsupported_parameter');
    assert.equal(error?.param, 'messages[1].content[0]');

    // A search result alone is text any model can read.
    const oa = h.simulators.get('oa')!;
    const beforeOa = oa.requests.length;
    await anthropic.messages.create({ model: 'gpt-x', max_tokens: 50, messages: [history[2]!] } as never);
    const chat = oa.requests.slice(beforeOa).find((r) => r.path.endsWith('/chat/completions'))!.body as {
      messages: { role: string; content: unknown }[];
    };
    assert.deepEqual(chat.messages.at(-1), {
      role: 'user',
      content: [
        { type: 'text', text: 'Opening hours (https://example.com/kb/1)\nOpen 9 to 5.' },
        { type: 'text', text: 'And when is the shop open?' },
      ],
    });
  });
});

describe('auto on the chat interfaces may pick a model served only by Responses API suppliers', () => {
  let h: GatewayHarness;
  let key: string;

  beforeAll(async () => {
    // The cheapest model is served only by a Responses API supplier; chat interfaces reach it through the bridge.
    h = await startGatewayHarness([
      {
        name: 'rs',
        protocol: 'openai-responses',
        region: 'EU',
        models: [{ id: 'resp-cheap', input_usd_per_mtok: 0.01, output_usd_per_mtok: 0.01 }],
      },
      { name: 'oa', protocol: 'openai', region: 'EU', models: [{ id: 'gpt-x', input_usd_per_mtok: 0.1, output_usd_per_mtok: 0.4 }] },
    ]);
    key = await h.createKey();
  });
  afterAll(async () => {
    await h.close();
  });

  test('chat completions and messages with auto choose the cheapest model, a responses-only one included', async () => {
    const openai = new OpenAI({ baseURL: `${h.gateway.url}/v1`, apiKey: key, maxRetries: 0 });
    const chat = await openai.chat.completions.create({ model: 'auto', messages: [{ role: 'user', content: 'x' }] });
    assert.equal(chat.model, 'resp-cheap');
    const anthropic = new Anthropic({ baseURL: h.gateway.url, apiKey: key, maxRetries: 0 });
    const message = await anthropic.messages.create({ model: 'auto', max_tokens: 50, messages: [{ role: 'user', content: 'x' }] });
    assert.equal(message.model, 'resp-cheap');
    assert.equal(message.stop_reason, 'end_turn');
  });

  test("a thread toward an OpenAI-protocol model is the SDK's ThreadUnsupportedRequestError, not a reply out of context", async () => {
    const anthropic = new Anthropic({ baseURL: h.gateway.url, apiKey: key, maxRetries: 0 });
    const error = await anthropic.messages
      .create({
        model: 'gpt-x',
        max_tokens: 50,
        messages: [{ role: 'user', content: 'and then?' }],
        thread: { type: 'continue', previous_message_id: 'msg_earlier' },
      } as never)
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    assert.ok(error instanceof Anthropic.APIError, String(error));
    assert.equal(error.status, 400);
    assert.equal(error.errorCode, 'thread_unsupported_request');
    assert.equal(error.constructor.name, 'ThreadUnsupportedRequestError');
  });
});
