// Anthropic message → OpenAI chat.completion (docs/interfaces.md §Translation rules: stop reasons, usage).
import type { TokenUsage } from '../../routing/cost.js';
import type { AnthropicMessage } from '../../wire/anthropic-messages.js';
import type { OpenAiChatCompletion, OpenAiToolCall } from '../../wire/openai-chat.js';
import { newChatCompletionId, unixSeconds } from '../shared/ids.js';
import { finishReasonFromAnthropic } from '../shared/stop-reasons.js';
import { openAiUsageFrom, tokenUsageFromAnthropic } from '../shared/usage.js';
import { jsonToolName } from './request.js';

/** The OpenAI response for an Anthropic message, and the usage it reported. */
export function chatCompletionFrom(
  message: AnthropicMessage,
  publicModel: string,
  jsonMode: boolean,
): { completion: OpenAiChatCompletion; usage: TokenUsage } {
  const texts: string[] = [];
  const toolCalls: OpenAiToolCall[] = [];
  let jsonAnswer: string | undefined;
  for (const block of message.content) {
    switch (block.type) {
      case 'text':
        texts.push(block.text);
        break;
      case 'tool_use':
        if (jsonMode && block.name === jsonToolName) jsonAnswer = JSON.stringify(block.input);
        else toolCalls.push({ id: block.id, type: 'function', function: { name: block.name, arguments: JSON.stringify(block.input) } });
        break;
      case 'thinking':
      case 'redacted_thinking':
        // OpenAI chat completions have no place for reasoning blocks.
        break;
      default: {
        const unknown: never = block;
        void unknown; // a block type added later is skipped rather than failing the whole answer
      }
    }
  }
  // In JSON mode the client expects parseable JSON in content: any preamble text is dropped.
  const text = jsonAnswer ?? texts.join('');
  let finishReason = finishReasonFromAnthropic(message.stop_reason);
  if (jsonAnswer !== undefined && toolCalls.length === 0 && finishReason === 'tool_calls') finishReason = 'stop';
  const usage = tokenUsageFromAnthropic(message.usage);
  const completion: OpenAiChatCompletion = {
    id: newChatCompletionId(),
    object: 'chat.completion',
    created: unixSeconds(),
    model: publicModel,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: text === '' ? null : text,
          refusal: null,
          ...(toolCalls.length > 0 && { tool_calls: toolCalls }),
        },
        logprobs: null,
        finish_reason: finishReason,
      },
    ],
    usage: openAiUsageFrom(usage),
  };
  return { completion, usage };
}
