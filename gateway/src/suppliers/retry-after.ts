import type { IncomingHttpHeaders } from 'node:http';

/**
 * The longest wait a supplier's Retry-After is taken at: it opens the supplier's circuit (and
 * cools a pooled credential) on every replica, and is relayed to the client. One answer saying
 * "999999999" must not take a primary supplier out for 31 years; after this long, one request
 * finds out whether it takes requests again.
 */
export const maxRetryAfterSeconds = 600;

/**
 * Whole seconds from a Retry-After header (delta-seconds or HTTP date), if present, at most
 * maxRetryAfterSeconds. A fraction ("1.5", which RFC 9110 does not allow but suppliers send) is
 * rounded up: the client's `Retry-After` header is whole seconds, and `retry_after_seconds` in the
 * body mirrors it (docs/errors.md) — it said 1.5 beside a header of 2.
 */
export function retryAfterSeconds(headers: IncomingHttpHeaders): number | undefined {
  const raw = headers['retry-after'];
  const value = Array.isArray(raw) ? raw[0] : raw;
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.min(maxRetryAfterSeconds, Math.max(0, Math.ceil(seconds)));
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.min(maxRetryAfterSeconds, Math.max(0, Math.ceil((date - Date.now()) / 1000)));
}
