import type { SupplierProtocolAdapter } from '../types.js';
import { mapOpenAiError } from './errors.js';

/** OpenAI-protocol suppliers (chat completions, embeddings, audio): Bearer credential. */
export const openAiAdapter: SupplierProtocolAdapter = {
  headers(route, context, apiKey) {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      // No compressed answer: the gateway reads suppliers' bytes as they are (pipeline/supplier-call.ts `refuseEncoded`).
      'accept-encoding': 'identity',
      'x-request-id': context.requestId,
    };
    if (apiKey) headers.authorization = `Bearer ${apiKey}`;
    return headers;
  },
  mapError: mapOpenAiError,
};
