import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ModelRoute } from '../../../core/config/index.js';
import { ApiError } from '../../../core/errors/index.js';
import type { GatewayDeps } from '../deps.js';
import type { MediaUsage, TokenUsage } from '../routing/cost.js';
import { usageHeaders } from '../routing/routing-headers.js';
import { answerHeaders } from './answer-headers.js';
import { noteUsage, routingRecord } from './attempts.js';
import type { Attempt } from './failover.js';
import { callSupplier } from './supplier-call.js';
import { readJson } from './upstream-json.js';

/** What an endpoint makes of its supplier's JSON answer: the client's body and what was consumed. */
export interface JsonAnswer {
  body: unknown;
  usage: TokenUsage | undefined;
  media?: MediaUsage;
}

/** The JSON request of one endpoint to one route, and how to read the answer. */
export interface JsonExchange {
  /** The public model id reported to the client. */
  publicModel: string;
  /** Path under the supplier's base URL, e.g. `/embeddings`. */
  path: string;
  /** The upstream body for a route (the route's upstream model id differs per supplier). */
  upstreamBody(route: ModelRoute): Record<string, unknown>;
  /**
   * Checks and normalises the answer; throws `upstream_invalid_response` when it is unusable
   * (failover). Asynchronous where it counts tokens the supplier did not report.
   */
  answer(json: unknown, route: ModelRoute): JsonAnswer | Promise<JsonAnswer>;
  /** Most bytes of the answer read, where the request may need more than the gateway's setting (embeddings). */
  answerLimitBytes?: number;
}

/**
 * The endpoint's reading of the answer. JSON of the wrong shape (null, a list, null items) is
 * the supplier's fault: whatever breaks while reading it is `502 upstream_invalid_response`,
 * which fails over — never a 500 blaming the gateway.
 */
async function readAnswer(exchange: JsonExchange, json: unknown, route: ModelRoute): Promise<JsonAnswer> {
  const supplier = route.supplier.name;
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    throw new ApiError('upstream_invalid_response', {
      humanMessage: `Supplier ${supplier} answered with JSON that is not an object`,
      details: { supplier },
    });
  }
  try {
    return await exchange.answer(json, route);
  } catch (error) {
    if (error instanceof ApiError) throw error;
    throw new ApiError('upstream_invalid_response', {
      humanMessage: `Supplier ${supplier} answered with JSON of an unexpected shape`,
      cause: error,
      details: { supplier },
    });
  }
}

/**
 * The attempt of an endpoint that sends JSON and answers JSON (embeddings, rerank): call, read,
 * normalise, record usage and cost, set the routing and usage headers.
 */
export function jsonAttempt(deps: GatewayDeps, request: FastifyRequest, reply: FastifyReply, exchange: JsonExchange): Attempt<unknown> {
  return async (route, _index, signal) => {
    const started = performance.now();
    const upstream = await callSupplier(
      deps.upstream,
      route,
      exchange.path,
      exchange.upstreamBody(route),
      { requestId: String(request.id), clientHeaders: request.headers },
      signal,
    );
    const limit = Math.max(deps.upstream.answerLimitBytes, exchange.answerLimitBytes ?? 0);
    const answer = await readAnswer(exchange, await readJson(upstream, route, limit), route);
    noteUsage(routingRecord(request), route, answer.usage, answer.media);
    void reply.headers({
      ...answerHeaders(reply, route, exchange.publicModel, started),
      ...usageHeaders(route, answer.usage, answer.media),
    });
    return { value: answer.body };
  };
}
