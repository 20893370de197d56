// Errors a supplier reports inside a 200 stream (or body) keep the supplier's own code (spec
// part 7 rule 5); only the status is chosen here, so the client's SDK picks the right class.
import { ApiError } from '../../../../core/errors/index.js';

/** The HTTP status that matches a supplier error type or code reported in-band. */
export function statusForProviderError(typeOrCode: string): number {
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

/** An in-band supplier error (Anthropic `error` event, OpenAI `{error:{…}}` chunk) as an ApiError. */
export function providerStreamError(code: string, message: string, typeForStatus: string = code): ApiError {
  return ApiError.fromProvider(code, statusForProviderError(typeForStatus), message);
}
