// Response helpers shared by every endpoint: one request/response pair ("exchange") and the two
// error body formats, so each handler only decides *what* to answer.
import type { IncomingMessage, ServerResponse } from 'node:http';

/** Which supplier's conventions (error shape, request-id header) a path follows. */
export type Family = 'openai' | 'anthropic';

/** One request being answered, with what the handlers need from the server. */
export interface Exchange {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly family: Family;
  /** Headers sent on every response of this exchange (instance name, request id). */
  readonly headers: Record<string, string>;
  /** Streaming fault: number of events/chunks to send before destroying the socket. */
  readonly cutAfter: number | undefined;
  /** Default embedding vector size of this instance. */
  readonly embeddingDimensions: number;
}

/** Sends a JSON body with an exact content-length. */
export function sendJson(ex: Exchange, status: number, body: unknown, extra?: Record<string, string>): void {
  sendBody(ex, status, JSON.stringify(body), 'application/json', extra);
}

/** Sends a complete text body of the given content type. */
export function sendBody(ex: Exchange, status: number, text: string, contentType: string, extra?: Record<string, string>): void {
  if (ex.res.headersSent || ex.res.destroyed) return;
  const headers: Record<string, string | number> = {
    ...ex.headers,
    ...extra,
    'content-type': contentType,
    'content-length': Buffer.byteLength(text),
  };
  ex.res.writeHead(status, headers);
  ex.res.end(text);
}

/** Optional detail for an error body. */
export interface ErrorDetail {
  type?: string;
  code?: string | null;
  param?: string | null;
  headers?: Record<string, string>;
}

/** Sends an error in the family's format: OpenAI `{error:{message,type,param,code}}`, Anthropic `{type:'error',error:{type,message}}`. */
export function sendError(ex: Exchange, status: number, message: string, detail: ErrorDetail = {}): void {
  const type = detail.type ?? errorType(ex.family, status);
  if (ex.family === 'anthropic') {
    sendJson(ex, status, { type: 'error', error: { type, message }, request_id: ex.headers['request-id'] ?? null }, detail.headers);
    return;
  }
  sendJson(
    ex,
    status,
    { error: { message, type, param: detail.param ?? null, code: detail.code ?? defaultOpenAiCode(status) } },
    detail.headers,
  );
}

/** The error `type` the real supplier uses for a status. */
export function errorType(family: Family, status: number): string {
  if (family === 'anthropic') {
    switch (status) {
      case 400:
        return 'invalid_request_error';
      case 401:
        return 'authentication_error';
      case 402:
        return 'billing_error';
      case 403:
        return 'permission_error';
      case 404:
        return 'not_found_error';
      case 413:
        return 'request_too_large';
      case 429:
        return 'rate_limit_error';
      case 529:
        return 'overloaded_error';
      default:
        return status < 500 ? 'invalid_request_error' : 'api_error';
    }
  }
  // OpenAI reports rate limits with the limited dimension as the type ("requests"/"tokens").
  if (status === 429) return 'requests';
  return status >= 500 ? 'server_error' : 'invalid_request_error';
}

function defaultOpenAiCode(status: number): string | null {
  switch (status) {
    case 401:
      return 'invalid_api_key';
    case 404:
      return 'not_found';
    case 429:
      return 'rate_limit_exceeded';
    default:
      return null;
  }
}

/** The message a supplier typically sends with an injected fault status. */
export function faultMessage(family: Family, status: number): string {
  switch (status) {
    case 429:
      return family === 'anthropic'
        ? 'Number of request tokens has exceeded your per-minute rate limit (simulated)'
        : 'Rate limit reached for requests (simulated)';
    case 500:
      return family === 'anthropic'
        ? 'Internal server error (simulated)'
        : 'The server had an error while processing your request (simulated)';
    case 502:
      return 'Bad gateway (simulated)';
    case 503:
      return 'The engine is currently overloaded, please try again later (simulated)';
    case 529:
      return 'Overloaded (simulated)';
    default:
      return `Simulated error ${status}`;
  }
}

/** Reads a non-negative integer option from a JSON body; undefined when absent, NaN when invalid. */
export function optionalInt(body: Record<string, unknown>, key: string): number | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : Number.NaN;
}

/** Narrows a parsed JSON body to an object (arrays and primitives are rejected). */
export function asObject(value: unknown): Record<string, unknown> | null {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
}

/** Stop sequences from `stop` / `stop_sequences` (string or string list). */
export function stopList(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.filter((s): s is string => typeof s === 'string');
  return [];
}
