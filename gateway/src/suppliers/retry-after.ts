import type { IncomingHttpHeaders } from 'node:http';

/** Seconds from a Retry-After header (delta-seconds or HTTP date), if present and sane. */
export function retryAfterSeconds(headers: IncomingHttpHeaders): number | undefined {
  const raw = headers['retry-after'];
  const value = Array.isArray(raw) ? raw[0] : raw;
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - Date.now()) / 1000));
}
