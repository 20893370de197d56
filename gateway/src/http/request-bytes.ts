import type { FastifyRequest } from 'fastify';

/**
 * Size of the request body in bytes: Content-Length when the client sent it, else an upper bound
 * from the parsed body (a UTF-16 code unit is at most 3 UTF-8 bytes). Bounds the input tokens
 * of budget reservations without tokenizing on the hot path.
 */
export function requestBytes(request: FastifyRequest): number {
  const length = Number(request.headers['content-length']);
  if (Number.isFinite(length) && length > 0) return length;
  return JSON.stringify(request.body ?? '').length * 3;
}
