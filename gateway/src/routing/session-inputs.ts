import { ApiError } from '../../../core/errors/index.js';
import { sentMoreThanOnce, type RequestHeaders } from '../http/repeated-header.js';
import type { ChatCompletionRequest } from '../interfaces/chat-completions/schema.js';
import type { MessagesRequest } from '../interfaces/messages/schema.js';
import type { SessionInputs } from './session-affinity.js';

type TextContent = string | readonly { type: string; text?: unknown }[] | null | undefined;

function textOf(content: TextContent): string {
  if (typeof content === 'string') return content;
  if (!content) return '';
  return content.map((part) => (part.type === 'text' && typeof part.text === 'string' ? part.text : '')).join('\n');
}

/**
 * The longest session identifier read, from the header or from metadata (as OpenAI bounds a
 * metadata value). The identifier is stored with each audit row of the session: unbounded, one
 * request could put megabytes into every row.
 */
export const maxSessionIdLength = 512;

/** The words every refusal of a long session identifier uses. */
export const sessionIdTooLong = `a session identifier is at most ${maxSessionIdLength} characters`;

function header({ headers, rawHeaders }: RequestHeaders): string | undefined {
  const value = headers['x-session-id'];
  if (typeof value !== 'string') return undefined;
  // Node joins a repeated X-Session-Id with ", ": the joined value names no session the client
  // chose. The raw list is read only when the value has a comma.
  if (value.includes(',') && sentMoreThanOnce(rawHeaders, 'x-session-id'))
    throw new ApiError('validation_error', {
      param: 'x-session-id',
      humanMessage: 'The X-Session-Id header was sent more than once; send one',
    });
  const id = value.trim();
  if (id.length <= maxSessionIdLength) return id === '' ? undefined : id;
  // Node reads header bytes as Latin-1: "é" arrives as two characters. Counted as the client wrote
  // it (UTF-8) — only past the limit, so a plain id costs nothing more.
  const written = Buffer.from(id, 'latin1').toString('utf8').length;
  if (written <= maxSessionIdLength) return id;
  return bounded(id, 'x-session-id', written);
}

/** A session identifier within `maxSessionIdLength`, else a validation error naming where it came from; '' is none. */
function bounded(id: string, param: string, length = id.length): string | undefined {
  if (length > maxSessionIdLength)
    throw new ApiError('validation_error', {
      param,
      humanMessage: `Invalid value for "${param}": ${sessionIdTooLong} (got ${length})`,
    });
  return id === '' ? undefined : id;
}

/** Session inputs of a chat-completions request: header, metadata, and the conversation's opening. */
export function chatSessionInputs(request: RequestHeaders, body: ChatCompletionRequest): SessionInputs {
  const system = body.messages.filter((m) => m.role === 'system' || m.role === 'developer').map((m) => textOf(m.content as TextContent));
  const firstUser = body.messages.find((m) => m.role === 'user');
  return {
    header: header(request),
    sessionId: body.metadata?.session_id || undefined,
    stickyKey: body.metadata?.sticky_key || undefined,
    conversationSeed: firstUser ? `${system.join('\n')}\u0000${textOf(firstUser.content as TextContent)}` : undefined,
  };
}

/** Session inputs of a messages request: header, metadata, and the conversation's opening. */
export function messagesSessionInputs(request: RequestHeaders, body: MessagesRequest): SessionInputs {
  const system = typeof body.system === 'string' ? body.system : (body.system ?? []).map((b) => b.text).join('\n');
  const firstUser = body.messages.find((m) => m.role === 'user');
  return {
    header: header(request),
    sessionId: body.metadata?.session_id || undefined,
    stickyKey: body.metadata?.sticky_key || undefined,
    conversationSeed: firstUser ? `${system}\u0000${textOf(firstUser.content as TextContent)}` : undefined,
  };
}

/**
 * Session inputs of a native Responses request: the header and metadata only (its input is not
 * read). A conversation continued with `previous_response_id` lives at the supplier that answered
 * it, so a session named by the client keeps it there.
 */
export function nativeSessionInputs(request: RequestHeaders, metadata: unknown): SessionInputs {
  const fields = metadata !== null && typeof metadata === 'object' ? (metadata as Record<string, unknown>) : {};
  const text = (name: 'session_id' | 'sticky_key') => {
    const value = fields[name];
    return typeof value === 'string' ? bounded(value, `metadata.${name}`) : undefined;
  };
  return { header: header(request), sessionId: text('session_id'), stickyKey: text('sticky_key'), conversationSeed: undefined };
}

/** Metadata keys the gateway reads for session affinity; never forwarded, on any lane. */
const gatewayMetadataKeys: ReadonlySet<string> = new Set(['session_id', 'sticky_key']);

/** The client's metadata without the gateway's own keys; undefined when nothing is left to forward. */
export function forwardedMetadata(metadata: Readonly<Record<string, unknown>> | null | undefined): Record<string, unknown> | undefined {
  if (!metadata) return undefined;
  const kept = Object.fromEntries(Object.entries(metadata).filter(([k]) => !gatewayMetadataKeys.has(k)));
  return Object.keys(kept).length > 0 ? kept : undefined;
}
