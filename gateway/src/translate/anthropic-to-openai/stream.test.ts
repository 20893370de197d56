import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { ApiError } from '../../../../core/errors/index.js';
import { messagesRequest } from '../../interfaces/messages/schema.js';
import type { SseEvent } from '../types.js';
import { expectedMessageUsage, openAiEvents, readFrames, testContext } from '../shared/test-fixtures.js';
import { shortenToolName } from './tool-names.js';
import { AnthropicToOpenAi } from './translator.js';

const longName = `mcp__${'server_'.repeat(12)}__fetch`;

function translator(): AnthropicToOpenAi {
  const request = messagesRequest.parse({
    model: 'public-model',
    max_tokens: 100,
    stream: true,
    messages: [{ role: 'user', content: 'Hi' }],
    tools: [
      { name: 'get_weather', input_schema: { type: 'object' } },
      { name: longName, input_schema: { type: 'object' } },
    ],
  });
  const t = new AnthropicToOpenAi(request, testContext('openai'));
  t.request();
  return t;
}

/** Feeds every event and the end; returns the client's frames with their data parsed. */
function run(t: AnthropicToOpenAi, events: SseEvent[]): { event: string | undefined; data: Record<string, unknown> }[] {
  let out = '';
  for (const event of events) out += t.streamEvent(event);
  out += t.streamEnd();
  out += t.streamClose(undefined);
  return readFrames(out).map((frame) => ({ event: frame.event, data: JSON.parse(frame.data) as Record<string, unknown> }));
}

/** A chunk with one choice. */
function chunk(delta: Record<string, unknown>, finish: string | null = null, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: 'chatcmpl-up',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'gpt-x',
    choices: [{ index: 0, delta, finish_reason: finish }],
    ...extra,
  };
}

const usageChunk = (prompt: number, completion: number, cached = 0) => ({
  id: 'chatcmpl-up',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'gpt-x',
  choices: [],
  usage: {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: cached },
  },
});

/** The frames without message_start's generated id, for exact comparison. */
function withoutIds(frames: ReturnType<typeof run>): unknown[] {
  return frames.map(({ event, data }) => {
    if (data.type !== 'message_start') return { event, data };
    const message = { ...(data.message as Record<string, unknown>) };
    assert.match(String(message.id), /^msg_/);
    delete message.id;
    return { event, data: { ...data, message } };
  });
}

/** A translated message_start's usage: every field an Anthropic message's usage has, nothing generated yet. */
const startUsage = expectedMessageUsage({ input: 0, output: 0, cacheRead: 0 });

const messageStart = {
  event: 'message_start',
  data: {
    type: 'message_start',
    message: {
      type: 'message',
      role: 'assistant',
      model: 'public-model',
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...startUsage, input_tokens: 0 },
    },
  },
};
const ping = { event: 'ping', data: { type: 'ping' } };

describe('AnthropicToOpenAi stream (state machine B)', () => {
  it('turns a text stream into the full Anthropic event sequence, every frame named', () => {
    const t = translator();
    const frames = run(
      t,
      openAiEvents([
        chunk({ role: 'assistant', content: '' }),
        chunk({ content: 'Hel' }),
        chunk({ content: 'lo' }),
        chunk({}, 'stop'),
        usageChunk(120, 7, 100),
      ]),
    );
    assert.deepEqual(withoutIds(frames), [
      messageStart,
      ping,
      { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } } },
      { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hel' } } },
      { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'lo' } } },
      { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
      {
        event: 'message_delta',
        data: {
          type: 'message_delta',
          delta: { stop_reason: 'end_turn', stop_sequence: null },
          usage: { input_tokens: 20, output_tokens: 7, cache_creation_input_tokens: 0, cache_read_input_tokens: 100 },
          // The call's totals at the route's prices: 20 × $1 + 100 cached × $0.1 + 7 × $2 per million.
          svc: { input_tokens: 120, output_tokens: 7, cost_usd: '0.000044' },
        },
      },
      { event: 'message_stop', data: { type: 'message_stop' } },
    ]);
    assert.deepEqual(t.usage(), { inputTokens: 120, outputTokens: 7, cachedInputTokens: 100 });
  });

  it('opens a tool block after text, handles name plus full arguments in one chunk, and restores long names', () => {
    const short = shortenToolName(longName);
    const frames = run(
      translator(),
      openAiEvents([
        chunk({ role: 'assistant', content: 'Checking.' }),
        chunk({
          tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
        }),
        chunk({ tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: short, arguments: '' } }] }),
        chunk({ tool_calls: [{ index: 1, function: { arguments: '{"url":' } }] }),
        chunk({ tool_calls: [{ index: 1, function: { arguments: '"x"}' } }] }),
        chunk({}, 'tool_calls'),
        usageChunk(50, 20),
      ]),
    );
    assert.deepEqual(withoutIds(frames).slice(2), [
      { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } } },
      { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Checking.' } } },
      { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
      {
        event: 'content_block_start',
        data: { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'call_a', name: 'get_weather', input: {} } },
      },
      {
        event: 'content_block_delta',
        data: { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"city":"Paris"}' } },
      },
      { event: 'content_block_stop', data: { type: 'content_block_stop', index: 1 } },
      {
        event: 'content_block_start',
        data: { type: 'content_block_start', index: 2, content_block: { type: 'tool_use', id: 'call_b', name: longName, input: {} } },
      },
      {
        event: 'content_block_delta',
        data: { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '{"url":' } },
      },
      {
        event: 'content_block_delta',
        data: { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '"x"}' } },
      },
      { event: 'content_block_stop', data: { type: 'content_block_stop', index: 2 } },
      {
        event: 'message_delta',
        data: {
          type: 'message_delta',
          delta: { stop_reason: 'tool_use', stop_sequence: null },
          usage: { input_tokens: 50, output_tokens: 20, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
          svc: { input_tokens: 50, output_tokens: 20, cost_usd: '0.00009' },
        },
      },
      { event: 'message_stop', data: { type: 'message_stop' } },
    ]);
  });

  it('without usage from the supplier, message_delta and message_stop wait for the charged usage', () => {
    const t = translator();
    let out = '';
    for (const event of openAiEvents([chunk({ role: 'assistant', content: 'Hello' }, 'stop')])) out += t.streamEvent(event);
    out += t.streamEnd();
    assert.deepEqual(
      readFrames(out).map((frame) => frame.event),
      ['message_start', 'ping', 'content_block_start', 'content_block_delta', 'content_block_stop'],
    );
    const charged = {
      usage: { inputTokens: 12, outputTokens: 3, cachedInputTokens: 0 },
      totals: { input_tokens: 12, output_tokens: 3, cost_usd: '0.00002' },
    };
    const closing = readFrames(t.streamClose(charged));
    assert.deepEqual(
      closing.map((frame) => frame.event),
      ['message_delta', 'message_stop'],
    );
    assert.deepEqual(JSON.parse(closing[0]!.data), {
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { input_tokens: 12, output_tokens: 3, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
      svc: charged.totals,
    });
    assert.equal(t.streamClose(charged), '', 'written once');
  });

  it('emits content before the finish when one chunk holds both, and maps length to max_tokens', () => {
    const frames = run(translator(), openAiEvents([chunk({ role: 'assistant', content: 'Cut off' }, 'length')]));
    assert.deepEqual(
      frames.map((frame) => frame.event),
      ['message_start', 'ping', 'content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop'],
    );
    assert.deepEqual(frames[3]!.data.delta, { type: 'text_delta', text: 'Cut off' });
    assert.deepEqual(frames[5]!.data, {
      type: 'message_delta',
      delta: { stop_reason: 'max_tokens', stop_sequence: null },
      usage: { output_tokens: 0 },
    });
  });

  it("a streamed refusal ends the turn as Anthropic's refusal", () => {
    const frames = run(
      translator(),
      openAiEvents([chunk({ role: 'assistant', refusal: 'I cannot' }), chunk({}, 'stop'), usageChunk(5, 2)]),
    );
    const delta = frames.find((f) => f.event === 'message_delta')!.data as { delta: { stop_reason: string } };
    assert.equal(delta.delta.stop_reason, 'refusal');
  });

  it('keeps the last usage when a supplier repeats cumulative usage on every chunk', () => {
    const t = translator();
    run(
      t,
      openAiEvents([
        chunk({ content: 'a' }, null, { usage: { prompt_tokens: 10, completion_tokens: 1, total_tokens: 11 } }),
        chunk({ content: 'b' }, null, { usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 } }),
        chunk({}, 'stop', { usage: { prompt_tokens: 10, completion_tokens: 3, total_tokens: 13 } }),
      ]),
    );
    assert.deepEqual(t.usage(), { inputTokens: 10, outputTokens: 3, cachedInputTokens: 0 });
  });

  it('fills message_start input tokens when the first chunk already carries usage', () => {
    const frames = run(
      translator(),
      openAiEvents([chunk({ content: 'a' }, 'stop', { usage: { prompt_tokens: 33, completion_tokens: 1, total_tokens: 34 } })]),
    );
    assert.deepEqual((frames[0]!.data.message as { usage: unknown }).usage, { ...startUsage, input_tokens: 33 });
  });

  it('finishes normally when the upstream omits [DONE] after a finish_reason', () => {
    const frames = run(translator(), openAiEvents([chunk({ content: 'Hi' }), chunk({}, 'stop'), usageChunk(5, 1)], false));
    assert.deepEqual(
      frames.slice(-2).map((frame) => frame.event),
      ['message_delta', 'message_stop'],
    );
    assert.equal((frames.at(-2)!.data.delta as { stop_reason: string }).stop_reason, 'end_turn');
  });

  it('a stream of [DONE] alone is empty_stream (nothing was sent: it fails over), not an empty 200 message', () => {
    assert.throws(
      () => translator().streamEvent({ data: '[DONE]' }),
      (err: unknown) => err instanceof ApiError && err.code === 'empty_stream' && err.status === 502,
    );
  });

  it('reports stream_interrupted when the upstream ended with neither [DONE] nor a finish_reason', () => {
    const t = translator();
    for (const event of openAiEvents([chunk({ content: 'Partial' })], false)) t.streamEvent(event);
    assert.throws(
      () => t.streamEnd(),
      (err: unknown) => err instanceof ApiError && err.code === 'stream_interrupted',
    );
    assert.throws(
      () => translator().streamEnd(),
      (err: unknown) => err instanceof ApiError && err.code === 'stream_interrupted',
    );
  });

  it('throws an upstream error chunk as an ApiError with the provider code', () => {
    const t = translator();
    t.streamEvent(openAiEvents([chunk({ content: 'a' })], false)[0]!);
    assert.throws(
      () =>
        t.streamEvent({
          data: JSON.stringify({ error: { message: 'Server overloaded', type: 'server_error', code: 'server_overloaded' } }),
        }),
      (err: unknown) =>
        err instanceof ApiError && err.code === 'server_overloaded' && err.status === 503 && err.humanMessage === 'Server overloaded',
    );
    assert.throws(
      () => translator().streamEvent({ event: 'error', data: JSON.stringify({ message: 'Boom', type: 'server_error' }) }),
      (err: unknown) => err instanceof ApiError && err.code === 'server_error' && err.status === 502,
    );
  });

  it('writes in-stream errors as a named error event the Anthropic SDK throws', () => {
    const frames = readFrames(translator().streamError(new ApiError('stream_interrupted'), 'req_1'));
    assert.equal(frames.length, 1);
    assert.equal(frames[0]!.event, 'error');
    const body = JSON.parse(frames[0]!.data) as { type: string; error: Record<string, unknown> };
    assert.equal(body.type, 'error');
    assert.equal(body.error.type, 'api_error');
    assert.equal(body.error.code, 'stream_interrupted');
    assert.match(String(body.error.message), /^stream_interrupted - /);
    // The Anthropic SDK exposes error.details.error_code as err.errorCode.
    assert.deepEqual(body.error.details, { error_code: 'stream_interrupted' });
  });

  it('treats a reused index 0 with a new id as a new tool call', () => {
    const frames = run(
      translator(),
      openAiEvents([
        chunk({
          tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
        }),
        chunk({
          tool_calls: [{ index: 0, id: 'call_b', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } }],
        }),
        chunk({}, 'tool_calls'),
      ]),
    );
    const starts = frames.filter((frame) => frame.event === 'content_block_start').map((frame) => frame.data.index);
    assert.deepEqual(starts, [0, 1]);
  });
});
