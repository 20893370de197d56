import type { IncomingHttpHeaders } from 'node:http';
import { ApiError, isErrorCode } from '../../../../core/errors/index.js';
import { retryAfterSeconds } from '../retry-after.js';
import { clientStatus, credentialsRefused, fallbackMessage, providerCode } from '../upstream-error.js';

interface OpenAiErrorBody {
  error?: { message?: unknown; type?: unknown; code?: unknown; param?: unknown };
}

/**
 * Maps an OpenAI-protocol supplier's error response to the error the client sees. The
 * provider's own code is kept (docs/spec-conformance.md 7.5); a credential problem between us and the
 * supplier is never shown as the client's `invalid_api_key`.
 */
export function mapOpenAiError(status: number, headers: IncomingHttpHeaders, text: string, supplier: string): ApiError {
  let parsed: OpenAiErrorBody | undefined;
  try {
    parsed = JSON.parse(text) as OpenAiErrorBody;
  } catch {
    parsed = undefined;
  }
  const retryAfter = retryAfterSeconds(headers);
  const details = { supplier, upstream_status: status };
  if (status === 401 || status === 403) return credentialsRefused(supplier, status);
  const upstream = parsed?.error;
  const code = providerCode(upstream?.code) ?? providerCode(upstream?.type);
  const message = typeof upstream?.message === 'string' && upstream.message ? upstream.message : undefined;
  const param = typeof upstream?.param === 'string' ? upstream.param : undefined;
  const options = { details, ...(retryAfter !== undefined && { retryAfterSeconds: retryAfter }), ...(param !== undefined && { param }) };
  const toClient = clientStatus(status);
  if (code && isErrorCode(code)) return new ApiError(code, { ...options, status: toClient, ...(message && { humanMessage: message }) });
  if (code) return ApiError.fromProvider(code, toClient, message ?? fallbackMessage(supplier, status), options);
  // No usable body: classify by status alone.
  if (status === 429) return new ApiError('rate_limit_exceeded', options);
  if (status === 503 || status === 529) return new ApiError('provider_unavailable', options);
  if (status === 504) return new ApiError('upstream_timeout', options);
  if (status >= 500) return new ApiError('upstream_error', options);
  if (status === 404) return new ApiError('model_not_available', options);
  if (status === 413) return new ApiError('request_too_large', options);
  return new ApiError('provider_error', { ...options, status, humanMessage: `Supplier ${supplier} rejected the request (HTTP ${status})` });
}
