import type { OutgoingHttpHeaders } from 'node:http';
import type { FastifyReply } from 'fastify';
import type { ModelRoute } from '../../../core/config/index.js';
import { routingHeaders } from '../routing/routing-headers.js';
import { isFailover, routingRecord } from './attempts.js';

/**
 * The routing headers of the answering attempt, computed when the headers are sent:
 * `x-svc-latency-ms` is the whole request so far (fastify's `elapsedTime`, from the request's
 * arrival: authentication, enforcement, earlier attempts, the answering attempt up to now),
 * `x-svc-attempt-latency-ms` the answering attempt alone (from sending it to now).
 */
export function answerHeaders(
  reply: FastifyReply,
  route: ModelRoute,
  publicModel: string,
  attemptStartedPerf: number,
): Record<string, string> {
  return routingHeaders(route, publicModel, {
    failover: isFailover(routingRecord(reply.request), route.supplier.name),
    latencyMs: reply.elapsedTime,
    attemptLatencyMs: performance.now() - attemptStartedPerf,
  });
}

/**
 * The headers set on the reply before it was hijacked to stream — `x-request-id`, and
 * `request-id` (which the Anthropic SDK reads) on the messages routes, both from the onRequest
 * hook. A hijacked reply's status line and headers are written by hand and would lose them.
 */
export function headersSetSoFar(reply: FastifyReply): OutgoingHttpHeaders {
  return reply.getHeaders() as OutgoingHttpHeaders;
}
