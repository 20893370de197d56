// What an HTTP server says about a request Node's parser refused before any route ran: shared by
// the gateway and the portal, so both answer such a request in the catalogue shape instead of
// Node's bare status line with no body.
import { STATUS_CODES } from 'node:http';
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { ApiError, errorResponseHeaders, renderErrorBody } from './api-error.js';

/** How long a connection being closed after an error may still drain what its client sends. */
export const lingerMs = 1_000;

/**
 * The catalogue error for what Node's HTTP server reports before any route runs: a request line or
 * headers it cannot parse, headers over its size limit, or a request whose headers or body did
 * not arrive within the deadline. `server` names the one answering ("gateway", "portal").
 */
export function clientErrorOf(error: NodeJS.ErrnoException, server: string): ApiError {
  switch (error.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new ApiError('request_timeout', {
        status: 408,
        humanMessage: 'The request headers and body did not arrive in time; the connection is closed',
      });
    case 'HPE_HEADER_OVERFLOW':
      return new ApiError('request_too_large', {
        status: 431,
        humanMessage: `The request line and headers are larger than the ${server} accepts`,
      });
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return new ApiError('request_too_large', {
        humanMessage: `The chunk extensions of the request body are larger than the ${server} accepts`,
      });
    default:
      return new ApiError('invalid_request', { humanMessage: 'The request is not well-formed HTTP/1.1' });
  }
}

/** How a server renders a catalogue error's JSON body (the portal adds top-level fields). */
export type ErrorBodyRenderer = (error: ApiError, requestId: string) => unknown;

/** The raw HTTP/1.1 response text of a catalogue error, for answers written straight to a socket. */
export function rawErrorResponse(error: ApiError, requestId: string, render: ErrorBodyRenderer = renderErrorBody): string {
  const body = JSON.stringify(render(error, requestId));
  const headers: Record<string, string> = {
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(body)),
    'x-request-id': requestId,
    connection: 'close',
    ...errorResponseHeaders(error),
  };
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  return `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? 'Error'}\r\n${lines.join('')}\r\n${body}`;
}

/**
 * A server's `clientError` handler: answers in the catalogue shape — unless a response has
 * already begun on the connection (then there is nothing valid left to say) — and closes the
 * connection. It ends gracefully and drains for a moment, so the client reads the answer rather
 * than a reset, then destroys the socket whatever the client does.
 */
export function clientErrorAnswerer(server: string, newRequestId: () => string, render: ErrorBodyRenderer = renderErrorBody) {
  return (error: NodeJS.ErrnoException, socket: Socket): void => {
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    const inFlight = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
    if (socket.writable && !inFlight?.headersSent) socket.end(rawErrorResponse(clientErrorOf(error, server), newRequestId(), render));
    else socket.end();
    socket.resume();
    setTimeout(() => socket.destroy(), lingerMs).unref();
  };
}
