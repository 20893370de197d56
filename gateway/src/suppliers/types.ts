import type { IncomingHttpHeaders } from 'node:http';
import type { ModelRoute } from '../../../core/config/index.js';
import type { ApiError } from '../../../core/errors/index.js';

/** What a supplier call needs from the client's request beyond the body. */
export interface SupplierCallContext {
  requestId: string;
  /** The client's headers, for the few a protocol forwards (e.g. `anthropic-beta`). */
  clientHeaders: IncomingHttpHeaders;
}

/**
 * How to talk to suppliers of one wire protocol: authentication and protocol headers, and the
 * single place where that protocol's error responses become catalogue / provider errors.
 */
export interface SupplierProtocolAdapter {
  /** `apiKey`: the credential of this attempt (one of the supplier's pool, or its single key). */
  headers(route: ModelRoute, context: SupplierCallContext, apiKey: string | undefined): Record<string, string>;
  mapError(status: number, headers: IncomingHttpHeaders, text: string, supplier: string): ApiError;
}
