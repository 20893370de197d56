// A supplier's whole answer read just enough to be translated or passed through, the same way on
// every lane: an error body that came with a 2xx status is the supplier's error with its own code
// (it fails over), a body of another shape is invalid_backend_response, a message without usage
// is still the answer (the gateway counts it: pipeline/charged-usage.ts).
import { ApiError } from '../../../../core/errors/index.js';
import type { SupplierProtocol } from '../../../../core/config/index.js';
import type { AnthropicMessage } from '../../wire/anthropic-messages.js';
import type { OpenAiChatCompletion } from '../../wire/openai-chat.js';
import { providerStreamError } from './provider-errors.js';
import { isJsonObject, stringifyObjectArguments } from './safe-json.js';

/** An OpenAI-style in-band error (`{error:{message,type,code}}`) as an ApiError keeping the supplier's code. */
export function openAiInBandError(error: Record<string, unknown>): ApiError {
  const type = typeof error.type === 'string' && error.type !== '' ? error.type : undefined;
  const code = typeof error.code === 'string' || typeof error.code === 'number' ? String(error.code) : undefined;
  const message = typeof error.message === 'string' && error.message !== '' ? error.message : 'The supplier reported an error';
  const chosen = code ?? type ?? 'upstream_error';
  return providerStreamError(chosen, message, type);
}

/**
 * The supplier's error a 2xx JSON body holds, in its protocol's shape — OpenAI `{error:{…}}`,
 * Anthropic `{type:"error",error:{…}}`, a Responses error object — with the supplier's own code;
 * none when the body is no error document. The same for a whole answer and for a JSON document
 * that answered a stream request (pipeline/stream-to-client.ts `refuseJsonForStream`).
 */
export function supplierErrorIn(protocol: SupplierProtocol, upstream: unknown): ApiError | undefined {
  if (!isJsonObject(upstream) || !isJsonObject(upstream.error)) return undefined;
  if (protocol === 'anthropic') {
    if (upstream.type !== 'error') return undefined;
    // An error body that arrived with a 2xx status: keep the supplier's own type as the code.
    const type = typeof upstream.error.type === 'string' ? upstream.error.type : 'api_error';
    const message = typeof upstream.error.message === 'string' ? upstream.error.message : 'The supplier reported an error';
    return providerStreamError(type, message);
  }
  if (protocol === 'openai-responses') return upstream.object !== 'response' ? responsesError(upstream.error) : undefined;
  return openAiInBandError(upstream.error);
}

/** An upstream body checked just enough to be read as an OpenAI chat completion. */
export function asChatCompletion(upstream: unknown): OpenAiChatCompletion {
  const error = supplierErrorIn('openai', upstream);
  if (error) throw error;
  if (!isJsonObject(upstream) || !Array.isArray(upstream.choices)) {
    throw new ApiError('invalid_backend_response', { humanMessage: 'The supplier answered with something other than a chat completion' });
  }
  // No choice is no answer, whichever client asked (it fails over like any unreadable answer).
  if (upstream.choices.length === 0)
    throw new ApiError('invalid_backend_response', { humanMessage: 'The supplier answered with no choice' });
  // A choice without its message is no answer either: passed through, an SDK's user code threw a
  // TypeError on it (the Anthropic lane already refused it). A property check per choice.
  for (const choice of upstream.choices) {
    if (!isJsonObject(choice) || !isJsonObject(choice.message))
      throw new ApiError('invalid_backend_response', { humanMessage: 'The supplier answered with a choice that has no message' });
    // Arguments written as an object: the string OpenAI clients' schema requires (safe-json.ts).
    if (Array.isArray(choice.message.tool_calls)) stringifyObjectArguments(choice.message.tool_calls);
  }
  return upstream as unknown as OpenAiChatCompletion;
}

/** An upstream body checked just enough to be read as an Anthropic message. */
export function asAnthropicMessage(upstream: unknown): AnthropicMessage {
  const error = supplierErrorIn('anthropic', upstream);
  if (error) throw error;
  if (!isJsonObject(upstream) || !Array.isArray(upstream.content)) {
    throw new ApiError('invalid_backend_response', {
      humanMessage: 'The supplier answered with something other than an Anthropic message',
    });
  }
  // A message without usage is still the answer: the gateway counts what it is charged (pipeline/charged-usage.ts).
  return (isJsonObject(upstream.usage) ? upstream : { ...upstream, usage: {} }) as unknown as AnthropicMessage;
}

/**
 * Whether an OpenAI stream chunk's choice carries any of the answer — content, a refusal, a tool
 * call or a finish_reason. A stream of `choices: []` chunks (usage only) and `[DONE]` carries none:
 * `empty_stream`, whichever client family it is relayed to.
 */
export function carriesAnswer(choice: { delta?: unknown; finish_reason?: unknown }): boolean {
  if (choice.finish_reason) return true;
  const delta = choice.delta as { content?: unknown; refusal?: unknown; tool_calls?: unknown } | null | undefined;
  if (typeof delta !== 'object' || delta === null) return false;
  return (
    (typeof delta.content === 'string' && delta.content !== '') ||
    (typeof delta.refusal === 'string' && delta.refusal !== '') ||
    (Array.isArray(delta.tool_calls) && delta.tool_calls.length > 0)
  );
}

/** A failed response (or an `error` event) as an ApiError keeping the supplier's code. */
export function responsesError(error: unknown): ApiError {
  const e = isJsonObject(error) ? error : {};
  const code = typeof e.code === 'string' || typeof e.code === 'number' ? String(e.code) : 'upstream_error';
  const message = typeof e.message === 'string' && e.message !== '' ? e.message : 'The supplier reported that the response failed';
  return providerStreamError(code, message);
}
