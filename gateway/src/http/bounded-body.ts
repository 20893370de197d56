// What the gateway reads of a supplier's answer before it stops. A JSON answer is read whole before
// it is parsed; without a bound a supplier sending 60 MB made each request hold ~140 MB, and ten at
// once took the process to 1.9 GB (the chart's pod limit is 512 MiB) while stalling every other
// request. Streams are relayed chunk by chunk and need no such bound.
import type { IncomingHttpHeaders } from 'node:http';
import { ApiError } from '../../../core/errors/index.js';
import type { UpstreamResponse } from './upstream-client.js';

/** The default most bytes of a supplier's JSON answer the gateway reads (SVC_SUPPLIER_ANSWER_MAX_BYTES). */
export const defaultAnswerLimitBytes = 32 * 1024 * 1024;

/** Of an answer whose beginning is all that is needed, only this much is read: an error's code and message, a token count. */
export const shortAnswerLimitBytes = 64 * 1024;

function declaredLength(headers: IncomingHttpHeaders): number | undefined {
  const value = headers['content-length'];
  const length = typeof value === 'string' ? Number(value) : NaN;
  return Number.isFinite(length) ? length : undefined;
}

/**
 * Lets go of an answer nothing has started reading: its connection is closed. A bare destroy()
 * there could raise an AbortError nobody listens to, which would stop the process; the listener
 * takes it (the answer is already the supplier's failure).
 */
export function abandonBody(upstream: UpstreamResponse): void {
  upstream.body.on('error', () => undefined);
  upstream.body.destroy();
}

/**
 * A supplier sent more than the gateway reads: `what` it sent (`answered with`, or a stream's
 * `sent a stream event of`) past `limit` — the supplier's failure, 502 `invalid_backend_response`.
 */
export function tooLarge(supplier: string, limit: number, what = 'answered with'): ApiError {
  return new ApiError('invalid_backend_response', {
    humanMessage: `Supplier ${supplier} ${what} more than ${limit >= 1024 * 1024 ? `${Math.round(limit / 1024 / 1024)} MiB` : `${Math.ceil(limit / 1024)} KiB`}, more than the gateway reads of an answer; it stopped reading`,
    details: { supplier },
  });
}

/**
 * The answer's body as text, at most `limit` bytes: past it (declared or received) the body is
 * abandoned and the answer is the supplier's failure (502 invalid_backend_response, which fails over).
 */
export async function readBoundedText(upstream: UpstreamResponse, limit: number, supplier: string): Promise<string> {
  const declared = declaredLength(upstream.headers);
  if (declared !== undefined && declared > limit) {
    abandonBody(upstream);
    throw tooLarge(supplier, limit);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of upstream.body) {
    size += (chunk as Buffer).length;
    if (size > limit) {
      upstream.body.destroy();
      throw tooLarge(supplier, limit);
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks, size).toString('utf8');
}

/**
 * The first `limit` bytes of an answer whose beginning is all that is needed (an error's body);
 * the rest is not read (the connection is closed instead of drained).
 */
export async function readTextPrefix(upstream: UpstreamResponse, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of upstream.body) {
    chunks.push(chunk as Buffer);
    size += (chunk as Buffer).length;
    if (size >= limit) {
      upstream.body.destroy();
      break;
    }
  }
  return Buffer.concat(chunks, size).subarray(0, limit).toString('utf8');
}
