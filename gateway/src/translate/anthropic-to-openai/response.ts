// OpenAI chat.completion → Anthropic message (docs/interfaces.md §Translation rules: stop reasons, usage).
import { ApiError } from '../../../../core/errors/index.js';
import type { TokenUsage } from '../../routing/cost.js';
import type { AnthropicMessage, AnthropicResponseBlock } from '../../wire/anthropic-messages.js';
import type { OpenAiChatCompletion } from '../../wire/openai-chat.js';
import { newMessageId, newToolUseId } from '../shared/ids.js';
import { isJsonObject, parseToolArguments } from '../shared/safe-json.js';
import { stopReasonFromOpenAi } from '../shared/stop-reasons.js';
import { sanitizeToolId } from '../shared/tool-ids.js';
import { anthropicMessageUsage, tokenUsageFromOpenAi } from '../shared/usage.js';
import type { ToolNameMap } from './tool-names.js';

/** A message's text: a string, or text parts some OpenAI-compatible servers send; anything else is not an answer. */
function messageText(content: unknown): string {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  if (Array.isArray(content) && content.every((part) => isJsonObject(part) && typeof part.text === 'string')) {
    return content.map((part) => (part as { text: string }).text).join('');
  }
  throw new ApiError('invalid_backend_response', { humanMessage: 'The supplier answered with message content that is not text' });
}

/** The Anthropic message for an OpenAI completion (first choice), and the usage it reported. */
export function anthropicMessageFrom(
  completion: OpenAiChatCompletion,
  publicModel: string,
  names: ToolNameMap,
): { message: AnthropicMessage; usage: TokenUsage } {
  const choice = completion.choices[0];
  if (choice === undefined || !isJsonObject(choice.message)) {
    throw new ApiError('invalid_backend_response', { humanMessage: 'The supplier answered with no choice' });
  }
  const content: AnthropicResponseBlock[] = [];
  const text = messageText(choice.message.content);
  // A refusal is the model's answer too; OpenAI keeps it apart, Anthropic as plain text.
  const shown = text !== '' ? text : (choice.message.refusal ?? '');
  if (shown !== '') content.push({ type: 'text', text: shown });
  for (const call of choice.message.tool_calls ?? []) {
    content.push({
      type: 'tool_use',
      id: call.id ? sanitizeToolId(call.id) : newToolUseId(),
      name: names.restore(call.function.name),
      input: parseToolArguments(call.function.arguments),
    });
  }
  const usage = tokenUsageFromOpenAi(completion.usage ?? {});
  const message: AnthropicMessage = {
    id: newMessageId(),
    type: 'message',
    role: 'assistant',
    model: publicModel,
    content,
    // A refusal the model gave (OpenAI keeps it apart from the text) is Anthropic's `refusal`.
    stop_reason:
      text === '' && choice.message.refusal
        ? 'refusal'
        : stopReasonFromOpenAi(choice.finish_reason, (choice.message.tool_calls ?? []).length > 0),
    // OpenAI reports a matched stop string as plain `stop`, so which one matched is unknown.
    stop_sequence: null,
    usage: anthropicMessageUsage(usage),
  };
  return { message, usage };
}
