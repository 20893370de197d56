import type { SupplierProtocolAdapter } from '../types.js';
import { mapOpenAiError } from '../openai/errors.js';

/**
 * OpenAI Responses suppliers (the native lane): Bearer with the lane's own credential (the
 * supplier's `api_key_env`), errors in the OpenAI shape.
 */
export const openAiResponsesAdapter: SupplierProtocolAdapter = {
  headers(route, context, apiKey) {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'text/event-stream',
      // No compressed answer: the gateway reads suppliers' bytes as they are (pipeline/supplier-call.ts `refuseEncoded`).
      'accept-encoding': 'identity',
      'x-request-id': context.requestId,
    };
    if (apiKey) headers.authorization = `Bearer ${apiKey}`;
    return headers;
  },
  mapError: mapOpenAiError,
};
