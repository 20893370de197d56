import type { NativeResponsesRequest } from '../interfaces/native-responses/schema.js';
import { imageTokenEstimate, perMessageTokens } from './count.js';
import type { Countable } from './tokenizer.js';

type Part = { type: string; text?: unknown; refusal?: unknown };

function* contentItems(content: string | readonly Part[]): Generator<Countable> {
  if (typeof content === 'string') {
    yield content;
    return;
  }
  for (const part of content) {
    if (typeof part.text === 'string') yield part.text;
    else if (typeof part.refusal === 'string') yield part.refusal;
    // Images, audio and files: their tokens depend on what the supplier does with them; one estimate.
    else if (part.type !== 'output_text' && part.type !== 'refusal') yield imageTokenEstimate;
  }
}

/**
 * What a native Responses request's input tokens are made of, as chatItems (chat-items.ts) for
 * chat: the instructions, every input item's text, function calls and outputs, and the tools.
 */
export function* responsesItems(request: NativeResponsesRequest): Generator<Countable> {
  if (request.instructions) yield request.instructions;
  for (const item of request.input) {
    yield perMessageTokens;
    if ('role' in item) yield* contentItems(item.content as string | Part[]);
    else if (item.type === 'function_call') {
      yield item.name;
      yield item.arguments;
    } else yield* contentItems(item.output as string | Part[]);
  }
  if (request.tools !== undefined) yield JSON.stringify(request.tools);
}
