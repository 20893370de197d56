import type { SupplierProtocolAdapter } from '../types.js';
import { mapAnthropicError } from './errors.js';

/** The only published version of the messages API; sent when the client named none. */
const defaultAnthropicVersion = '2023-06-01';
const versionPattern = /^\d{4}-\d{2}-\d{2}$/;

/** Anthropic-protocol suppliers: `x-api-key`, `anthropic-version`, forwarded `anthropic-beta`. */
export const anthropicAdapter: SupplierProtocolAdapter = {
  headers(route, context, apiKey) {
    const requested = context.clientHeaders['anthropic-version'] ?? context.clientHeaders['ext-version'];
    const version = typeof requested === 'string' && versionPattern.test(requested) ? requested : defaultAnthropicVersion;
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      // No compressed answer: the gateway reads suppliers' bytes as they are (pipeline/supplier-call.ts `refuseEncoded`).
      'accept-encoding': 'identity',
      'anthropic-version': version,
      'x-request-id': context.requestId,
    };
    const beta = context.clientHeaders['anthropic-beta'];
    if (typeof beta === 'string' && beta) headers['anthropic-beta'] = beta;
    if (apiKey) headers['x-api-key'] = apiKey;
    return headers;
  },
  mapError: mapAnthropicError,
};
