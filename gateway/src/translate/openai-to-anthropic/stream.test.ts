import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { ApiError } from '../../../../core/errors/index.js';
import { chatCompletionRequest } from '../../interfaces/chat-completions/schema.js';
import type { SseEvent } from '../types.js';
import { anthropicEvents, readFrames, testContext } from '../shared/test-fixtures.js';
import { OpenAiToAnthropic } from './translator.js';

function translator(extra: Record<string, unknown> = {}): OpenAiToAnthropic {
  const request = chatCompletionRequest.parse({
    model: 'public-model',
    messages: [{ role: 'user', content: 'Hi' }],
    stream: true,
    ...extra,
  });
  const t = new OpenAiToAnthropic(request, testContext('anthropic'));
  t.request();
  return t;
}

/** Feeds every event and the end, returning the frames the client receives. */
function run(t: OpenAiToAnthropic, events: SseEvent[]): { event?: string; data: string }[] {
  let out = '';
  for (const event of events) out += t.streamEvent(event);
  out += t.streamEnd();
  return readFrames(out);
}

/** The choices[0] of each chunk frame (the [DONE] frame as the string 'DONE'). */
function deltas(frames: { data: string }[]): unknown[] {
  return frames.map((frame) => {
    if (frame.data === '[DONE]') return 'DONE';
    const chunk = JSON.parse(frame.data) as { choices: { delta: unknown; finish_reason: unknown }[]; usage?: unknown };
    const choice = chunk.choices[0];
    return choice === undefined ? { usage: chunk.usage } : { delta: choice.delta, finish_reason: choice.finish_reason };
  });
}

const messageStart = (usage: Record<string, number> = { input_tokens: 25, output_tokens: 1 }) => ({
  type: 'message_start',
  message: {
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model: 'claude-x',
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage,
  },
});

describe('OpenAiToAnthropic stream (state machine A)', () => {
  it('turns a text-then-tool stream into OpenAI chunks, the first tool at index 0', () => {
    const t = translator({ stream_options: { include_usage: true } });
    const frames = run(
      t,
      anthropicEvents([
        messageStart({ input_tokens: 25, output_tokens: 1, cache_read_input_tokens: 100, cache_creation_input_tokens: 3 }),
        { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
        { type: 'ping' },
        { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Let me ' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'check.' } },
        { type: 'content_block_stop', index: 0 },
        { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: {} } },
        { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '' } },
        { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"city":' } },
        { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '"Paris"}' } },
        { type: 'content_block_stop', index: 1 },
        { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 12 } },
        { type: 'message_delta', delta: { stop_reason: null, stop_sequence: null }, usage: { output_tokens: 30 } },
        { type: 'message_stop' },
      ]),
    );
    assert.ok(
      frames.every((frame) => frame.event === undefined),
      'chat chunks travel as bare data: frames',
    );
    assert.deepEqual(deltas(frames), [
      { delta: { role: 'assistant', content: '' }, finish_reason: null },
      { delta: { content: 'Let me ' }, finish_reason: null },
      { delta: { content: 'check.' }, finish_reason: null },
      {
        delta: { tool_calls: [{ index: 0, id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '' } }] },
        finish_reason: null,
      },
      { delta: { tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }, finish_reason: null },
      { delta: { tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }, finish_reason: null },
      { delta: {}, finish_reason: 'tool_calls' },
      // Output counts are cumulative: the last value (30) is the one reported.
      { usage: { prompt_tokens: 128, completion_tokens: 30, total_tokens: 158, prompt_tokens_details: { cached_tokens: 100 } } },
      'DONE',
    ]);
    const chunks = frames.slice(0, -1).map((frame) => JSON.parse(frame.data) as Record<string, unknown>);
    const first = chunks[0]!;
    assert.match(String(first.id), /^chatcmpl-/);
    for (const chunk of chunks) {
      assert.equal(chunk.id, first.id);
      assert.equal(chunk.object, 'chat.completion.chunk');
      assert.equal(chunk.created, first.created);
      assert.equal(chunk.model, 'public-model');
    }
    assert.equal(chunks[1]!.usage, null);
    assert.deepEqual(t.usage(), { inputTokens: 128, outputTokens: 30, cachedInputTokens: 100, cacheWriteInputTokens: 3 });
  });

  it('numbers two parallel tool calls 0 and 1 and sends no usage chunk unless asked', () => {
    const t = translator();
    const frames = run(
      t,
      anthropicEvents([
        messageStart(),
        { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'toolu_a', name: 'get_weather', input: {} } },
        { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"city":"Paris"}' } },
        { type: 'content_block_stop', index: 0 },
        { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'toolu_b', name: 'get_weather', input: {} } },
        { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"city":"Rome"}' } },
        { type: 'content_block_stop', index: 1 },
        { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 40 } },
        { type: 'message_stop' },
      ]),
    );
    assert.deepEqual(deltas(frames), [
      { delta: { role: 'assistant', content: '' }, finish_reason: null },
      {
        delta: { tool_calls: [{ index: 0, id: 'toolu_a', type: 'function', function: { name: 'get_weather', arguments: '' } }] },
        finish_reason: null,
      },
      { delta: { tool_calls: [{ index: 0, function: { arguments: '{"city":"Paris"}' } }] }, finish_reason: null },
      {
        delta: { tool_calls: [{ index: 1, id: 'toolu_b', type: 'function', function: { name: 'get_weather', arguments: '' } }] },
        finish_reason: null,
      },
      { delta: { tool_calls: [{ index: 1, function: { arguments: '{"city":"Rome"}' } }] }, finish_reason: null },
      { delta: {}, finish_reason: 'tool_calls' },
      'DONE',
    ]);
    assert.equal('usage' in (JSON.parse(frames[1]!.data) as object), false);
    assert.deepEqual(t.usage(), { inputTokens: 25, outputTokens: 40, cachedInputTokens: 0 });
  });

  it('a tool call with empty input streams arguments {} as a whole answer has them, never "" (not JSON)', () => {
    const frames = run(
      translator(),
      anthropicEvents([
        messageStart(),
        { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'toolu_a', name: 'now', input: {} } },
        { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '' } },
        { type: 'content_block_stop', index: 0 },
        { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 5 } },
        { type: 'message_stop' },
      ]),
    );
    const args = deltas(frames)
      .flatMap((d) => (d as { delta?: { tool_calls?: { function?: { arguments?: string } }[] } }).delta?.tool_calls ?? [])
      .map((call) => call.function?.arguments ?? '')
      .join('');
    assert.equal(args, '{}');
  });

  it('drops thinking and maps max_tokens to length', () => {
    const frames = run(
      translator(),
      anthropicEvents([
        messageStart(),
        { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Let me think' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'sig' } },
        { type: 'content_block_stop', index: 0 },
        { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } },
        { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'Cut' } },
        { type: 'content_block_stop', index: 1 },
        { type: 'message_delta', delta: { stop_reason: 'max_tokens', stop_sequence: null }, usage: { output_tokens: 8 } },
        { type: 'message_stop' },
      ]),
    );
    assert.deepEqual(deltas(frames), [
      { delta: { role: 'assistant', content: '' }, finish_reason: null },
      { delta: { content: 'Cut' }, finish_reason: null },
      { delta: {}, finish_reason: 'length' },
      'DONE',
    ]);
  });

  it('streams the JSON-mode tool input as delta.content, finishing with stop', () => {
    const frames = run(
      translator({ response_format: { type: 'json_object' } }),
      anthropicEvents([
        messageStart(),
        { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'toolu_j', name: 'json_tool_call', input: {} } },
        { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"answer":' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '42}' } },
        { type: 'content_block_stop', index: 0 },
        { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 9 } },
        { type: 'message_stop' },
      ]),
    );
    assert.deepEqual(deltas(frames), [
      { delta: { role: 'assistant', content: '' }, finish_reason: null },
      { delta: { content: '{"answer":' }, finish_reason: null },
      { delta: { content: '42}' }, finish_reason: null },
      { delta: {}, finish_reason: 'stop' },
      'DONE',
    ]);
  });

  it('throws an upstream error event as an ApiError carrying the provider type as its code', () => {
    const t = translator();
    t.streamEvent(anthropicEvents([messageStart()])[0]!);
    const [errorEvent] = anthropicEvents([{ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }]);
    assert.throws(
      () => t.streamEvent(errorEvent!),
      (err: unknown) =>
        err instanceof ApiError && err.code === 'overloaded_error' && err.status === 503 && err.humanMessage === 'Overloaded',
    );
    const [rateLimited] = anthropicEvents([{ type: 'error', error: { type: 'rate_limit_error', message: 'Slow down' } }]);
    assert.throws(
      () => translator().streamEvent(rateLimited!),
      (err: unknown) => err instanceof ApiError && err.status === 429,
    );
    const [other] = anthropicEvents([{ type: 'error', error: { type: 'api_error', message: 'Boom' } }]);
    assert.throws(
      () => translator().streamEvent(other!),
      (err: unknown) => err instanceof ApiError && err.code === 'api_error' && err.status === 502,
    );
  });

  it('reports stream_interrupted when the upstream ended before message_stop', () => {
    const t = translator();
    const events = anthropicEvents([
      messageStart(),
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Partial' } },
    ]);
    for (const event of events) t.streamEvent(event);
    assert.throws(
      () => t.streamEnd(),
      (err: unknown) => err instanceof ApiError && err.code === 'stream_interrupted',
    );
    assert.throws(
      () => translator().streamEnd(),
      (err: unknown) => err instanceof ApiError && err.code === 'stream_interrupted',
    );
  });

  it('writes in-stream errors as a data: frame with a top-level error key', () => {
    const frames = readFrames(translator().streamError(new ApiError('stream_error'), 'req_1'));
    assert.equal(frames.length, 1);
    assert.equal(frames[0]!.event, undefined);
    const body = JSON.parse(frames[0]!.data) as { error: Record<string, unknown> };
    assert.equal(body.error.code, 'stream_error');
    assert.equal(body.error.type, 'api_error');
    assert.equal(body.error.param, null);
    assert.match(String(body.error.message), /^stream_error - /);
    assert.equal(typeof body.error.human_message, 'string');
  });

  it('refuses a stream frame that is not JSON', () => {
    assert.throws(
      () => translator().streamEvent({ event: 'message_start', data: 'not json' }),
      (err: unknown) => err instanceof ApiError && err.code === 'invalid_backend_response',
    );
  });
});
