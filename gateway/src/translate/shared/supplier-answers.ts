// A supplier's whole answer read just enough to be translated or passed through, the same way on
// every lane: an error body that came with a 2xx status is the supplier's error with its own code
// (it fails over), a body of another shape is invalid_backend_response, a message without usage
// is still the answer (the gateway counts it: pipeline/charged-usage.ts).
import { ApiError } from '../../../../core/errors/index.js';
import type { AnthropicMessage } from '../../wire/anthropic-messages.js';
import type { OpenAiChatCompletion } from '../../wire/openai-chat.js';
import { providerStreamError } from './provider-errors.js';
import { isJsonObject } from './safe-json.js';

/** An OpenAI-style in-band error (`{error:{message,type,code}}`) as an ApiError keeping the supplier's code. */
export function openAiInBandError(error: Record<string, unknown>): ApiError {
  const type = typeof error.type === 'string' && error.type !== '' ? error.type : undefined;
  const code = typeof error.code === 'string' || typeof error.code === 'number' ? String(error.code) : undefined;
  const message = typeof error.message === 'string' && error.message !== '' ? error.message : 'The supplier reported an error';
  const chosen = code ?? type ?? 'upstream_error';
  return providerStreamError(chosen, message, type);
}

/** An upstream body checked just enough to be read as an OpenAI chat completion. */
export function asChatCompletion(upstream: unknown): OpenAiChatCompletion {
  if (isJsonObject(upstream) && isJsonObject(upstream.error)) throw openAiInBandError(upstream.error);
  if (!isJsonObject(upstream) || !Array.isArray(upstream.choices)) {
    throw new ApiError('invalid_backend_response', { humanMessage: 'The supplier answered with something other than a chat completion' });
  }
  // No choice is no answer, whichever client asked (it fails over like any unreadable answer).
  if (upstream.choices.length === 0)
    throw new ApiError('invalid_backend_response', { humanMessage: 'The supplier answered with no choice' });
  return upstream as unknown as OpenAiChatCompletion;
}

/** An upstream body checked just enough to be read as an Anthropic message. */
export function asAnthropicMessage(upstream: unknown): AnthropicMessage {
  if (isJsonObject(upstream) && upstream.type === 'error' && isJsonObject(upstream.error)) {
    // An error body that arrived with a 2xx status: keep the supplier's own type as the code.
    const type = typeof upstream.error.type === 'string' ? upstream.error.type : 'api_error';
    const message = typeof upstream.error.message === 'string' ? upstream.error.message : 'The supplier reported an error';
    throw providerStreamError(type, message);
  }
  if (!isJsonObject(upstream) || !Array.isArray(upstream.content)) {
    throw new ApiError('invalid_backend_response', {
      humanMessage: 'The supplier answered with something other than an Anthropic message',
    });
  }
  // A message without usage is still the answer: the gateway counts what it is charged (pipeline/charged-usage.ts).
  return (isJsonObject(upstream.usage) ? upstream : { ...upstream, usage: {} }) as unknown as AnthropicMessage;
}
