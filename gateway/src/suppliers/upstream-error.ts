// What every protocol's error mapper decides the same way: which supplier code is kept, and which
// status the client sees. One place, so the OpenAI-protocol and Anthropic-protocol mappers (and
// the documentation in docs/interfaces.md "Errors") cannot drift apart again.
import { ApiError } from '../../../core/errors/index.js';

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

/**
 * A supplier refused the gateway's own credential (401/403): never shown as the client's key
 * problem, and not worth a client's retry — only an administrator's fix helps (`x-should-retry:
 * false`). Still a 502, so the next supplier is tried (failover goes by status).
 */
export function credentialsRefused(supplier: string, upstreamStatus: number): ApiError {
  return new ApiError('upstream_error', {
    humanMessage: `Supplier ${supplier} refused the gateway's credentials; an administrator must fix the supplier configuration`,
    details: { supplier, upstream_status: upstreamStatus },
    retryable: false,
  });
}

/** What stands for the gateway's credential in a supplier's error text. */
export const credentialMask = '[credential removed]';

/**
 * A supplier's error text without the credential the gateway sent it: some suppliers and the
 * proxies before them quote the `Authorization` or `x-api-key` they received ("… you sent
 * Authorization=Bearer sk-…"), and the text becomes the client's `human_message` (outside probe:
 * the gateway's supplier key reached clients on 400 and 429 answers). Short values are left
 * alone: a credential of a few characters would match ordinary words.
 */
export function withoutCredential(text: string, credential: string | undefined): string {
  if (credential === undefined || credential.length < 8) return text;
  // JSON may spell the credential with escapes (`\/`, `\u0041`) that parsing turns back into it:
  // such a document is masked as it will be read, re-written without needless escapes.
  const readable = text.includes('\\') ? reWritten(text) : text;
  return readable.includes(credential) ? readable.replaceAll(credential, credentialMask) : text;
}

/** A JSON document parsed and written again (escapes only where JSON needs them), or the text as it is. */
function reWritten(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text));
  } catch {
    return text;
  }
}

/**
 * A supplier's error as the gateway relays it (an in-stream `error` event, an error object in a
 * stream or a 2xx body) without the credential the gateway sent: its `human_message` and
 * `message`, which quote the supplier's text. Errors without it are returned as they are; only
 * failures pay for the look.
 */
export function errorWithoutCredential<E>(error: E, credential: string | undefined): E {
  if (!(error instanceof ApiError) || credential === undefined || credential.length < 8 || !error.message.includes(credential))
    return error;
  const copy = Object.create(Object.getPrototypeOf(error) as object) as ApiError;
  Object.defineProperties(copy, Object.getOwnPropertyDescriptors(error));
  Object.defineProperty(copy, 'humanMessage', { value: error.humanMessage.replaceAll(credential, credentialMask), enumerable: true });
  Object.defineProperty(copy, 'message', { value: error.message.replaceAll(credential, credentialMask), writable: true });
  return copy as E;
}

/**
 * Server-sent events relayed as the supplier wrote them (the native Responses lane) without the
 * credential the gateway sent: each `data:` line masked as `withoutCredential` masks an error body
 * (escaped spellings included). For the events that follow a failure event only.
 */
export function eventsWithoutCredential(events: Buffer, credential: string | undefined): Buffer {
  if (credential === undefined || credential.length < 8) return events;
  const text = events.toString('utf8');
  let changed = false;
  const lines = text.split('\n').map((line) => {
    if (!line.startsWith('data:')) return line;
    const cr = line.endsWith('\r') ? '\r' : '';
    const data = line.slice(5, line.length - cr.length);
    const masked = withoutCredential(data, credential);
    if (masked === data) return line;
    changed = true;
    return `data: ${masked.trimStart()}${cr}`;
  });
  return changed ? Buffer.from(lines.join('\n'), 'utf8') : events;
}
