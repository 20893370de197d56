import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { ApiError } from '../../../../core/errors/index.js';
import { chatCompletionRequest } from '../../interfaces/chat-completions/schema.js';
import type { AnthropicMessage, AnthropicStopReason } from '../../wire/anthropic-messages.js';
import type { OpenAiChatCompletion } from '../../wire/openai-chat.js';
import { testContext } from '../shared/test-fixtures.js';
import { OpenAiToAnthropic } from './translator.js';

function translator(extra: Record<string, unknown> = {}): OpenAiToAnthropic {
  const request = chatCompletionRequest.parse({ model: 'public-model', messages: [{ role: 'user', content: 'Hi' }], ...extra });
  const t = new OpenAiToAnthropic(request, testContext('anthropic'));
  t.request();
  return t;
}

function message(overrides: Partial<AnthropicMessage>): AnthropicMessage {
  return {
    id: 'msg_upstream',
    type: 'message',
    role: 'assistant',
    model: 'claude-x',
    content: [{ type: 'text', text: 'Hello' }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 10, output_tokens: 5 },
    ...overrides,
  };
}

describe('OpenAiToAnthropic.response', () => {
  it('builds a chat.completion with text, tool calls, mapped finish reason and usage including cache tokens', () => {
    const t = translator();
    const before = Math.floor(Date.now() / 1000);
    const out = t.response(
      message({
        content: [
          { type: 'thinking', thinking: 'hmm', signature: 'sig' },
          { type: 'text', text: 'Let me ' },
          { type: 'text', text: 'check.' },
          { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
        ],
        stop_reason: 'tool_use',
        usage: { input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 100, cache_creation_input_tokens: 20 },
      }),
    ) as OpenAiChatCompletion;
    assert.match(out.id, /^chatcmpl-[0-9a-f]{32}$/);
    assert.equal(out.object, 'chat.completion');
    assert.ok(out.created >= before && out.created <= before + 1);
    assert.equal(out.model, 'public-model');
    assert.deepEqual(out.choices, [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: 'Let me check.',
          refusal: null,
          tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
        },
        logprobs: null,
        finish_reason: 'tool_calls',
      },
    ]);
    assert.deepEqual(out.usage, {
      prompt_tokens: 130,
      completion_tokens: 5,
      total_tokens: 135,
      prompt_tokens_details: { cached_tokens: 100 },
    });
    assert.deepEqual(t.usage(), { inputTokens: 130, outputTokens: 5, cachedInputTokens: 100, cacheWriteInputTokens: 20 });
  });

  it('maps each stop reason and gives null content when there is no text', () => {
    const cases: [AnthropicStopReason, string][] = [
      ['end_turn', 'stop'],
      ['stop_sequence', 'stop'],
      ['max_tokens', 'length'],
      ['model_context_window_exceeded', 'length'],
      ['refusal', 'content_filter'],
      ['pause_turn', 'stop'],
    ];
    for (const [reason, finish] of cases) {
      const out = translator().response(message({ stop_reason: reason, content: [] })) as OpenAiChatCompletion;
      assert.equal(out.choices[0]!.finish_reason, finish, reason);
      assert.equal(out.choices[0]!.message.content, null);
    }
  });

  it('returns the forced JSON tool input as content with finish_reason stop in JSON mode', () => {
    const t = translator({ response_format: { type: 'json_object' } });
    const out = t.response(
      message({
        content: [
          { type: 'text', text: 'Here you go:' },
          { type: 'tool_use', id: 'toolu_j', name: 'json_tool_call', input: { answer: 42 } },
        ],
        stop_reason: 'tool_use',
      }),
    ) as OpenAiChatCompletion;
    assert.equal(out.choices[0]!.message.content, '{"answer":42}');
    assert.equal(out.choices[0]!.message.tool_calls, undefined);
    assert.equal(out.choices[0]!.finish_reason, 'stop');
  });

  it('keeps a tool named json_tool_call as a tool call outside JSON mode', () => {
    const out = translator().response(
      message({ content: [{ type: 'tool_use', id: 'toolu_j', name: 'json_tool_call', input: {} }], stop_reason: 'tool_use' }),
    ) as OpenAiChatCompletion;
    assert.equal(out.choices[0]!.finish_reason, 'tool_calls');
    assert.equal(out.choices[0]!.message.tool_calls?.length, 1);
  });

  it('throws the supplier error type as the code for an error body, invalid_backend_response for junk', () => {
    assert.throws(
      () => translator().response({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }),
      (err: unknown) => err instanceof ApiError && err.code === 'overloaded_error' && err.status === 503,
    );
    assert.throws(
      () => translator().response({ choices: [] }),
      (err: unknown) => err instanceof ApiError && err.code === 'invalid_backend_response',
    );
  });
});
