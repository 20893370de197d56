import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { ApiError, errorResponseHeaders, renderErrorBody } from '../../../core/errors/index.js';
import { clientErrorAnswerer, lingerMs, rawErrorResponse } from '../../../core/errors/client-errors.js';

/** A new request id, in the form every answered request carries (`x-request-id`). */
export function newRequestId(): string {
  return `req_${randomUUID().replaceAll('-', '')}`;
}

/** The gateway's `clientError` handler (core/errors/client-errors.ts). */
export const answerClientError = clientErrorAnswerer('gateway', newRequestId);

/**
 * How much of an early-answered request's body is still read and discarded before the connection
 * is dropped (docs/interfaces.md "Limits"). Enough for an upload just over a limit (a 26 MB file
 * against 25 MB) to finish on any reasonable link, so its client reads the answer instead of a
 * reset; bounded in bytes and in time, so a trickling or endless body cannot hold the connection.
 */
export const earlyAnswerDrain = { maxBytes: 64 * 1024 * 1024, maxMs: 10_000 } as const;

/**
 * Closes the connection of a request answered before its body finished arriving (refused key,
 * body over the limit), instead of reading — for as long as the client cares to trickle — a body
 * nobody will use. Gracefully: the answer is flushed and followed by a FIN, and what the client
 * still sends is read and discarded until the body ends (then the client closes its side), or
 * until `earlyAnswerDrain` bytes or milliseconds have passed; then the socket is destroyed. A
 * client still writing when its connection is destroyed gets a reset and may never read the
 * answer (the official SDKs then retry the whole upload), which is why this is not immediate.
 */
export function closeAfterEarlyAnswer(request: IncomingMessage, drain: { maxBytes: number; maxMs: number } = earlyAnswerDrain): void {
  const socket = request.socket;
  if (socket.destroyed) return;
  socket.end();
  let discarded = 0;
  const drop = () => {
    clearTimeout(deadline);
    request.removeListener('data', count);
    socket.destroy();
  };
  const count = (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > drain.maxBytes) drop();
  };
  const deadline = setTimeout(drop, drain.maxMs);
  deadline.unref();
  request.on('data', count);
  // The whole body arrived: the client now reads the answer and closes; the FIN is already sent.
  request.once('end', () => {
    clearTimeout(deadline);
    request.removeListener('data', count);
    setTimeout(() => socket.destroy(), lingerMs).unref();
  });
  request.resume();
}

/**
 * Decides, before an error answer's headers are written, whether its connection stays open. A
 * request refused before its body was read (a missing or malformed key is refused as soon as the
 * headers are parsed) may still have its whole body in the bytes already received: one turn of
 * the event loop lets Node's parser take them, and such a connection stays open for the next
 * request (Node discards the unread body). A body still arriving after that is not waited for:
 * the answer says `connection: close`, because `closeAfterEarlyAnswer` then closes the connection
 * — a keep-alive answer followed by a close makes a pooled client send its next request into a
 * dead socket.
 */
export function settleEarlyAnswer(
  request: IncomingMessage,
  reply: { header(name: string, value: string): unknown },
): Promise<void> | undefined {
  if (request.complete) return undefined;
  // Only a declared body can be waiting in the bytes received. A request without one that is still
  // not complete (an HTTP/0.9-style line, read until the client closes) is answered at once, in
  // the same turn, before its client's close can take the connection.
  if (request.headers['content-length'] === undefined && request.headers['transfer-encoding'] === undefined) {
    keepReadingAfterClose(request);
    return undefined;
  }
  return new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
    if (request.complete) return;
    reply.header('connection', 'close');
    keepReadingAfterClose(request);
  });
}

/**
 * Keeps a connection whose request body is still arriving from being destroyed as soon as its
 * answer is written. Node ends a `connection: close` response (fastify sends one when a body is
 * over the limit) with `socket.destroySoon()`: the socket is destroyed once the answer is
 * flushed, and a client still uploading gets a reset instead of the answer. Node falls back to
 * `socket.end()` (a FIN, reading on) when a socket has no `destroySoon`; this socket gets that
 * behaviour, and `closeAfterEarlyAnswer` (the onResponse hook) drains and destroys it in bounds.
 */
export function keepReadingAfterClose(request: IncomingMessage): void {
  if (request.complete) return;
  const socket = request.socket as Socket & { destroySoon?: () => void };
  socket.destroySoon = () => void socket.end();
}

/**
 * The requests Node's server would answer itself, outside any route, with a bare status: an
 * `Expect` other than 100-continue (417) and CONNECT (Node closes the connection without a word).
 * Both get the catalogue shape here.
 */
export function answerOutsideRoutes(server: Server): void {
  server.on('checkExpectation', (_request: IncomingMessage, response: ServerResponse) => {
    const error = new ApiError('invalid_request', {
      status: 417,
      param: 'expect',
      humanMessage: 'The only expectation the gateway meets is "Expect: 100-continue"',
    });
    const requestId = newRequestId();
    const body = JSON.stringify(renderErrorBody(error, requestId));
    response.writeHead(error.status, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
      'x-request-id': requestId,
      connection: 'close',
      ...errorResponseHeaders(error),
    });
    response.end(body);
  });
  server.on('connect', (_request: IncomingMessage, socket: Socket) => {
    const error = new ApiError('method_not_allowed', { humanMessage: 'The gateway is not a proxy; CONNECT is not allowed' });
    socket.end(rawErrorResponse(error, newRequestId()));
    setTimeout(() => socket.destroy(), lingerMs).unref();
  });
}
