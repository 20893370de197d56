import type { IncomingHttpHeaders } from 'node:http';
import { ApiError } from '../../../../core/errors/index.js';
import { retryAfterSeconds } from '../retry-after.js';
import { clientStatus, credentialsRefused, fallbackMessage, providerCode } from '../upstream-error.js';

interface AnthropicErrorBody {
  type?: unknown;
  error?: { type?: unknown; code?: unknown; message?: unknown };
}

/**
 * Maps an Anthropic-protocol supplier's error response. The provider's error type is kept as
 * the code (docs/spec-conformance.md 7.5); 529 (overloaded) becomes 503 since clients of the OpenAI family
 * know no 529; the supplier refusing our credential is never shown as the client's key problem.
 */
export function mapAnthropicError(status: number, headers: IncomingHttpHeaders, text: string, supplier: string): ApiError {
  let parsed: AnthropicErrorBody | undefined;
  try {
    parsed = JSON.parse(text) as AnthropicErrorBody;
  } catch {
    parsed = undefined;
  }
  const details = { supplier, upstream_status: status };
  if (status === 401 || status === 403) return credentialsRefused(supplier, status);
  const retryAfter = retryAfterSeconds(headers);
  const options = { details, ...(retryAfter !== undefined && { retryAfterSeconds: retryAfter }) };
  // Anthropic's own errors name themselves by `type`; a JSON-RPC style supplier behind the same
  // protocol may send a (numeric) `code` instead, which is kept just the same.
  const code = providerCode(parsed?.error?.type) ?? providerCode(parsed?.error?.code);
  const message = parsed?.error?.message;
  if (code) {
    return ApiError.fromProvider(
      code,
      clientStatus(status),
      typeof message === 'string' && message ? message : fallbackMessage(supplier, status),
      options,
    );
  }
  if (status === 429) return new ApiError('rate_limit_exceeded', options);
  if (status === 529 || status === 503) return new ApiError('provider_unavailable', options);
  if (status === 504) return new ApiError('upstream_timeout', options);
  if (status >= 500) return new ApiError('upstream_error', options);
  return new ApiError('provider_error', { ...options, status, humanMessage: `Supplier ${supplier} rejected the request (HTTP ${status})` });
}
