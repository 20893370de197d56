import type { FastifyReply } from 'fastify';

/**
 * A signal that fires when the client goes away before the response is complete, so the
 * supplier call is cancelled instead of working (and billing) for nobody.
 */
export function clientAbortSignal(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  return controller.signal;
}
