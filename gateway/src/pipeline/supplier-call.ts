import type { Readable } from 'node:stream';
import type { ModelRoute } from '../../../core/config/index.js';
import { ApiError } from '../../../core/errors/index.js';
import { abandonBody, shortAnswerLimitBytes, readTextPrefix } from '../http/bounded-body.js';
import type { AttemptSignal } from '../http/cancellation.js';
import type { UpstreamClient, UpstreamResponse } from '../http/upstream-client.js';
import { supplierAdapters } from '../suppliers/registry.js';
import type { SupplierCallContext } from '../suppliers/types.js';
import { withoutCredential } from '../suppliers/upstream-error.js';

/** A request body that is not JSON (a multipart upload), streamed to the supplier as it is read. */
export class RawRequestBody {
  constructor(
    readonly contentType: string,
    readonly content: Readable,
    readonly contentLength?: number,
  ) {}
}

/** The credential an attempt sends its supplier: the pool's chosen one, else the supplier's own. */
export function sentCredential(route: ModelRoute, signal: AttemptSignal): string | undefined {
  return signal.credential?.apiKey ?? route.supplier.apiKey;
}

/**
 * POSTs a JSON (or raw) body to `{base_url}{path}` of the route's supplier. Resolves with the response
 * when the supplier answered 2xx; otherwise reads the error body and throws the error mapped by
 * the supplier's protocol adapter (the one place each protocol's errors are interpreted).
 */
export async function callSupplier(
  client: UpstreamClient,
  route: ModelRoute,
  path: string,
  body: Record<string, unknown> | RawRequestBody,
  context: SupplierCallContext,
  signal: AttemptSignal,
): Promise<UpstreamResponse> {
  const adapter = supplierAdapters[route.supplier.protocol];
  const credential = sentCredential(route, signal);
  const headers = adapter.headers(route, context, credential);
  let payload: string | Readable;
  if (body instanceof RawRequestBody) {
    headers['content-type'] = body.contentType;
    if (body.contentLength !== undefined) headers['content-length'] = String(body.contentLength);
    payload = body.content;
  } else {
    payload = JSON.stringify(body);
  }
  const response = await client.post(route.supplier, path, headers, payload, signal);
  signal.firstByteArrived();
  if (response.statusCode >= 200 && response.statusCode < 300) {
    const encoding = response.headers['content-encoding'];
    if (encoding !== undefined) refuseEncoded(response, encoding, route);
    return response;
  }
  if (response.statusCode < 400) {
    // A redirect (or another non-error, non-success status) is not an answer: suppliers are
    // called at their configured URL only, so it is the supplier's failure (502, failover).
    abandonBody(response);
    throw new ApiError('upstream_error', {
      humanMessage: `Supplier ${route.supplier.name} answered HTTP ${response.statusCode} instead of a response; the gateway does not follow supplier redirects`,
      details: { supplier: route.supplier.name, upstream_status: response.statusCode },
    });
  }
  let text: string;
  try {
    text = await readTextPrefix(response, shortAnswerLimitBytes);
  } catch (cause) {
    throw new ApiError('upstream_error', { cause, details: { supplier: route.supplier.name } });
  }
  throw adapter.mapError(response.statusCode, response.headers, withoutCredential(text, credential), route.supplier.name);
}

/** The error an attempt ends with when its supplier's whole-call deadline passes. */
export function deadlineError(route: ModelRoute): ApiError {
  return new ApiError('provider_timeout', {
    humanMessage: `Supplier ${route.supplier.name} did not finish within ${route.supplier.timeoutMs} ms`,
    details: { supplier: route.supplier.name },
  });
}

/** The error an attempt ends with when its supplier sends no response headers in time. */
export function firstByteError(route: ModelRoute): ApiError {
  return new ApiError('provider_timeout', {
    humanMessage: `Supplier ${route.supplier.name} sent no response within ${route.supplier.firstByteTimeoutMs} ms`,
    details: { supplier: route.supplier.name },
  });
}

/**
 * A 2xx answer compressed although the gateway asked for none (`accept-encoding: identity`, sent
 * on every supplier request: with no Accept-Encoding RFC 9110 lets a server pick any coding, and a
 * gzipped answer read as it came was "not JSON" or a broken stream). Said as what it is, naming the
 * encoding — the supplier's fault, failed over as other answers the gateway cannot read.
 */
function refuseEncoded(response: UpstreamResponse, encoding: string | string[], route: ModelRoute): void {
  const named = (Array.isArray(encoding) ? encoding.join(', ') : encoding).trim();
  if (named === '' || named.toLowerCase() === 'identity') return;
  abandonBody(response);
  throw new ApiError('invalid_backend_response', {
    humanMessage: `Supplier ${route.supplier.name} answered with Content-Encoding ${named.slice(0, 40)}; the gateway asks for uncompressed answers`,
    details: { supplier: route.supplier.name, content_encoding: named.slice(0, 40) },
  });
}
