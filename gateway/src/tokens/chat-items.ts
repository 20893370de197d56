import type { ChatCompletionRequest } from '../interfaces/chat-completions/schema.js';
import { imageTokenEstimate, perMessageTokens } from './count.js';
import type { Countable } from './tokenizer.js';

type Content = ChatCompletionRequest['messages'][number]['content'];

function* contentItems(content: Content | null | undefined): Generator<Countable> {
  if (typeof content === 'string') {
    yield content;
    return;
  }
  for (const part of content ?? []) {
    if (part.type === 'text') yield part.text;
    else if (part.type === 'refusal' && typeof part.refusal === 'string') yield part.refusal;
    // Images, audio and files: their tokens depend on what the supplier does with them; one estimate.
    else yield imageTokenEstimate;
  }
}

/**
 * What an OpenAI chat request's input tokens are made of, as messagesItems (count.ts) for the
 * Anthropic form: every message's text and tool calls, the tool definitions and the response
 * schema the supplier is given.
 */
export function* chatItems(request: ChatCompletionRequest): Generator<Countable> {
  for (const message of request.messages) {
    yield perMessageTokens;
    yield* contentItems(message.content as Content | null | undefined);
    if (message.role === 'assistant') {
      if (typeof message.refusal === 'string') yield message.refusal;
      for (const call of message.tool_calls ?? []) {
        if (call.type === 'function') {
          yield call.function.name;
          yield call.function.arguments;
        } else {
          yield call.custom.name;
          yield call.custom.input;
        }
      }
    }
  }
  if (request.tools) yield JSON.stringify(request.tools);
  const format = request.response_format;
  if (format?.type === 'json_schema') yield JSON.stringify(format.json_schema);
}
