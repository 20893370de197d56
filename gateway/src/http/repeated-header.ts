import type { IncomingMessage } from 'node:http';

/** What is read of a request's headers: Node's parsed map, and the raw list to see repeats. */
export type RequestHeaders = Pick<IncomingMessage, 'headers' | 'rawHeaders'>;

/**
 * Whether the raw header list (name, value, name, value…) holds `lowerName` more than once. Node
 * keeps the first of some repeated headers (Authorization) and joins others with ", "
 * (X-Session-Id): either way the value read is not what the client meant, so callers refuse it.
 */
export function sentMoreThanOnce(rawHeaders: readonly string[], lowerName: string): boolean {
  let seen = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    if (name.length === lowerName.length && name.toLowerCase() === lowerName && ++seen > 1) return true;
  }
  return false;
}

/**
 * The first parameter a parsed query string holds more than once: fastify's parser turns
 * `limit=2&limit=3` into `["2", "3"]`, which a number check would call NaN. No query parameter the
 * gateway reads is a list, so a repeat is refused as one, like a repeated header.
 */
export function repeatedQueryParam(query: unknown): string | undefined {
  if (query === null || typeof query !== 'object') return undefined;
  for (const [name, value] of Object.entries(query)) if (Array.isArray(value)) return name;
  return undefined;
}
