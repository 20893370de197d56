import type { ModelRoute } from '../../../core/config/index.js';
import { ApiError } from '../../../core/errors/index.js';
import { readBoundedText } from '../http/bounded-body.js';
import { transportError, type UpstreamResponse } from '../http/upstream-client.js';

/**
 * Reads a supplier's 2xx JSON body, at most `limit` bytes (http/bounded-body.ts). A body that is
 * not JSON, or larger, is the supplier's fault (failover-able 502); a body that stopped arriving is
 * what stopped it — the attempt's deadline (`provider_timeout`, passed through by undici as the
 * signal's reason), the body timeout, or a dropped connection — never "not JSON", which would tell
 * the client not to retry a transient failure.
 */
export async function readJson(upstream: UpstreamResponse, route: ModelRoute, limit: number): Promise<unknown> {
  try {
    return parseSupplierJson(await readBoundedText(upstream, limit, route.supplier.name));
  } catch (cause) {
    if (cause instanceof ApiError) throw cause;
    if (cause instanceof SyntaxError)
      throw new ApiError('non_json_provider_response', { cause, details: { supplier: route.supplier.name } });
    throw transportError(cause, route.supplier.name);
  }
}

/** A supplier's JSON text parsed; a leading byte order mark (some servers write UTF-8 with one) is no part of the JSON. */
export function parseSupplierJson(text: string): unknown {
  return JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text) as unknown;
}

/**
 * A supplier's answer read by `read` (a translator turning it into the client's format). Whatever
 * breaks there that is not a catalogue error (a `TypeError` on `choices: [null]`) was caused by
 * the supplier's data: it is `502 invalid_backend_response`, which fails over and counts against
 * that supplier — never `internal_error`, which would blame the gateway and stop the failover.
 */
export function readSupplierAnswer<T>(supplier: string, read: () => T): T {
  try {
    return read();
  } catch (cause) {
    if (cause instanceof ApiError) throw cause;
    throw new ApiError('invalid_backend_response', {
      humanMessage: `Supplier ${supplier} answered with data of an unexpected shape`,
      cause,
      details: { supplier },
    });
  }
}
