// What every protocol's error mapper decides the same way: which supplier code is kept, and which
// status the client sees. One place, so the OpenAI-protocol and Anthropic-protocol mappers (and
// the documentation in docs/interfaces.md "Errors") cannot drift apart again.

/**
 * The supplier's own error code, kept with its identity (docs/errors.md "Supplier codes"): a
 * non-empty string as it is, and a numeric code — JSON-RPC style `-32603`, or a vendor's `1301` —
 * as its decimal string, since `error.code` is a string on the wire. Anything else is no code.
 */
export function providerCode(value: unknown): string | undefined {
  if (typeof value === 'string') return value.trim() ? value : undefined;
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  return undefined;
}

/**
 * The status a client sees for a supplier's answer: the supplier's own, except 529 ("overloaded",
 * an Anthropic extension no OpenAI-family client knows), which becomes 503 with the code kept.
 */
export function clientStatus(upstreamStatus: number): number {
  return upstreamStatus === 529 ? 503 : upstreamStatus;
}

/** The human message for a supplier error that carried a code but no readable message. */
export function fallbackMessage(supplier: string, upstreamStatus: number): string {
  return `Supplier ${supplier} failed the request (HTTP ${upstreamStatus})`;
}
