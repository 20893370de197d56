import type { Server } from 'node:http';
import type { FastifyInstance } from 'fastify';

/**
 * `Expect: 100-continue` asks the server whether to send the body. Node answers `100 Continue` as
 * soon as the headers arrive, so a client was invited to upload a body the gateway then refused
 * unread — `413` past the size limit, `401` for a bad key — megabytes sent for nothing (found by
 * an outside probe). Here the server hands such a request to the app like any other, and the
 * app invites the body only when it is about to read it: after authentication (onRequest), and
 * only when the declared length is within the route's limit (past it, fastify answers `413`
 * before reading anything). A route that reads its body itself (audio uploads, streamed) names
 * its bound in its config as `invitedBodyBytes`.
 */
export function inviteBodiesOnlyWhenRead(app: FastifyInstance, server: Server): void {
  server.on('checkContinue', (request, response) => server.emit('request', request, response));
  app.addHook('preParsing', (request, reply, payload, done) => {
    const expect = request.headers.expect;
    if (expect !== undefined && expect.toLowerCase() === '100-continue' && !reply.raw.headersSent) {
      const declared = Number(request.headers['content-length']);
      // A route that streams its body itself names its own bound (config.invitedBodyBytes).
      const config = request.routeOptions.config as { invitedBodyBytes?: number } | undefined;
      if (!(declared > (config?.invitedBodyBytes ?? request.routeOptions.bodyLimit))) reply.raw.writeContinue();
    }
    done(null, payload);
  });
}
