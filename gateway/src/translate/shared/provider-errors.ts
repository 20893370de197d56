// Errors a supplier reports inside a 200 stream (or body) keep the supplier's own code
// (docs/spec-conformance.md 7.5); only the status is chosen here, so the client's SDK picks the right class.
import { ApiError } from '../../../../core/errors/index.js';

/** The HTTP status that matches a supplier error type or code reported in-band. */
export function statusForProviderError(typeOrCode: string | undefined): number {
  switch (typeOrCode) {
    case 'overloaded_error':
    case 'server_overloaded':
      return 503;
    case 'rate_limit_error':
    case 'rate_limit_exceeded':
      return 429;
    default:
      return 502;
  }
}

/**
 * An in-band supplier error (Anthropic `error` event, OpenAI `{error:{…}}` chunk) as an ApiError.
 * The status comes from the first of code and type that says more than "failed" (OpenAI puts
 * `rate_limit_exceeded` in code with type `requests`; Anthropic has only a type).
 */
export function providerStreamError(code: string, message: string, type?: string): ApiError {
  const byCode = statusForProviderError(code);
  return ApiError.fromProvider(code, byCode !== 502 ? byCode : statusForProviderError(type), message);
}
