import type { SupplierProtocol } from '../../../core/config/index.js';
import type { ChatCompletionRequest } from '../interfaces/chat-completions/schema.js';
import type { MessagesRequest } from '../interfaces/messages/schema.js';
import { AnthropicToAnthropic } from './anthropic-to-anthropic.js';
import { tallied, type AnswerTally } from './answer-tally.js';
import { AnthropicToOpenAi } from './anthropic-to-openai/index.js';
import { ChatViaResponses } from './chat-via-responses/translator.js';
import { OpenAiToAnthropic } from './openai-to-anthropic/index.js';
import { OpenAiToOpenAi } from './openai-to-openai.js';
import type { TranslationContext, Translator } from './types.js';

/** A validated client request, tagged with its interface family. */
export type ClientRequest = { family: 'openai'; body: ChatCompletionRequest } | { family: 'anthropic'; body: MessagesRequest };

/** Supplier protocols that can serve a chat-style request from either client family: all of them. */
export const chatProtocols: readonly SupplierProtocol[] = ['openai', 'anthropic', 'openai-responses'];

/**
 * The translator for a client family and a supplier protocol: one instance per request.
 * Exhaustive over both unions, so a new protocol or family fails to compile until handled.
 * With a `tally`, the supplier's answer is also kept for counting (answer-tally.ts).
 */
export function createTranslator(
  client: ClientRequest,
  protocol: SupplierProtocol,
  context: TranslationContext,
  tally?: AnswerTally,
): Translator {
  switch (protocol) {
    case 'openai':
      return tallied(
        client.family === 'openai' ? new OpenAiToOpenAi(client.body, context) : new AnthropicToOpenAi(client.body, context),
        'openai-chat',
        tally,
      );
    case 'anthropic':
      return tallied(
        client.family === 'openai' ? new OpenAiToAnthropic(client.body, context) : new AnthropicToAnthropic(client.body, context),
        'anthropic',
        tally,
      );
    case 'openai-responses':
      // The client's translator toward OpenAI chat, with chat ↔ Responses bridged underneath (the
      // tally reads the bridged chat answer).
      return new ChatViaResponses(createTranslator(client, 'openai', context, tally), client.family);
    default: {
      const unreachable: never = protocol;
      throw new Error(`no translator for protocol ${String(unreachable)}`);
    }
  }
}
