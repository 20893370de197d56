import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import type { AnthropicStopReason } from '../../wire/anthropic-messages.js';
import type { OpenAiFinishReason } from '../../wire/openai-chat.js';
import { finishReasonFromAnthropic, stopReasonFromOpenAi } from './stop-reasons.js';

describe('stop reasons', () => {
  it('maps every Anthropic stop_reason to an OpenAI finish_reason', () => {
    const expected: Record<AnthropicStopReason, string> = {
      end_turn: 'stop',
      stop_sequence: 'stop',
      pause_turn: 'stop',
      max_tokens: 'length',
      model_context_window_exceeded: 'length',
      tool_use: 'tool_calls',
      refusal: 'content_filter',
    };
    for (const [reason, finish] of Object.entries(expected)) {
      assert.equal(finishReasonFromAnthropic(reason as AnthropicStopReason), finish, reason);
    }
    assert.equal(finishReasonFromAnthropic(null), 'stop');
  });

  it('maps every OpenAI finish_reason to an Anthropic stop_reason', () => {
    const expected: Record<OpenAiFinishReason, AnthropicStopReason> = {
      stop: 'end_turn',
      length: 'max_tokens',
      tool_calls: 'tool_use',
      content_filter: 'refusal',
      function_call: 'tool_use',
    };
    for (const [finish, reason] of Object.entries(expected)) {
      assert.equal(stopReasonFromOpenAi(finish as OpenAiFinishReason), reason, finish);
    }
    assert.equal(stopReasonFromOpenAi(null), 'end_turn');
    assert.equal(stopReasonFromOpenAi(null, true), 'tool_use');
    assert.equal(stopReasonFromOpenAi('stop', true), 'tool_use');
    assert.equal(stopReasonFromOpenAi('length', true), 'max_tokens');
  });

  it('never passes an unknown raw value across', () => {
    assert.equal(finishReasonFromAnthropic('brand_new_reason' as AnthropicStopReason), 'stop');
    assert.equal(stopReasonFromOpenAi('eos' as OpenAiFinishReason), 'end_turn');
  });
});
