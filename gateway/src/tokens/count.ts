import { countTokens } from 'gpt-tokenizer';
import type { MessagesRequest, CountTokensRequest } from '../interfaces/messages/schema.js';

/**
 * Local token counting with a maintained BPE tokenizer (gpt-tokenizer, o200k_base), used where
 * the supplier offers no counting endpoint. Counts of other model families' tokenizers differ
 * by a few percent; the figure is an estimate for budgeting and context checks, not a bill.
 */
export function countTextTokens(text: string): number {
  return text.length === 0 ? 0 : countTokens(text);
}

/** Tokens charged for an image whose size is unknown (Anthropic's figure for ~1.15 megapixels). */
export const imageTokenEstimate = 1_600;
/** Per-message framing tokens (role markers), as chat tokenizers add them. */
const perMessageTokens = 3;

type Content = MessagesRequest['messages'][number]['content'];

function contentTokens(content: Content): number {
  if (typeof content === 'string') return countTextTokens(content);
  let total = 0;
  for (const block of content) {
    switch (block.type) {
      case 'text':
        total += countTextTokens(block.text);
        break;
      case 'image':
      case 'document':
        total += imageTokenEstimate;
        break;
      case 'tool_use':
        total += countTextTokens(block.name) + countTextTokens(JSON.stringify(block.input));
        break;
      case 'tool_result':
        total += block.content === undefined ? 0 : contentTokens(block.content as Content);
        break;
      case 'thinking':
        total += countTextTokens(block.thinking);
        break;
      case 'redacted_thinking':
        break;
      default: {
        const unreachable: never = block;
        throw new Error(`unknown block ${JSON.stringify(unreachable)}`);
      }
    }
  }
  return total;
}

/** Input tokens of a messages-style request: system, messages and tool definitions. */
export function countMessagesTokens(request: CountTokensRequest): number {
  let total = 0;
  if (typeof request.system === 'string') total += countTextTokens(request.system);
  else if (request.system) for (const block of request.system) total += countTextTokens(block.text);
  for (const message of request.messages) total += perMessageTokens + contentTokens(message.content);
  if (request.tools) total += countTextTokens(JSON.stringify(request.tools));
  return total;
}
