import type { FastifyRequest } from 'fastify';
import type { Catalogue } from '../../../core/config/index.js';
import { isErrorCode, type ErrorCode } from '../../../core/errors/index.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The code of the error this request was answered with, set where errors are rendered. */
    errorCode?: string;
    /** The client closed the connection before its answer ended (set in app.ts when it does). */
    clientClosed?: boolean;
    /**
     * A stream's terminal error event was written while its client was there: the answer was
     * decided and sent (a 200 ending in the error), only its totals and end were still to come.
     * A client leaving after it — the SDKs close on the error event — left nothing undecided.
     */
    streamErrorSent?: boolean;
    /** The routed pipeline (pipeline/serve-routed.ts) is working on this request: it calls `afterPipeline` when it ends. */
    inPipeline?: boolean;
    /**
     * What is owed once the pipeline ends, set when the client left while it worked: the request
     * line and metrics of a client that left after its stream's error event, or the routing
     * metrics (attempts, tokens, cost) of any other client that left (app.ts).
     */
    afterPipeline?: () => void;
  }
}

/**
 * How a request whose client left before its answer ended is recorded — in the request line, the
 * metrics' status and the audit record alike: nginx's 499 "client closed request". Not a catalogue
 * code: no client is ever answered with it, there being no client left to answer.
 */
export const clientClosedRequest = { status: 499, code: 'client_closed_request' } as const;

/**
 * The interface of a request that never reached routing (or is not routed at all), from its
 * route pattern. Routed requests carry their interface in the routing record instead.
 */
const interfaceOfRoute: Readonly<Record<string, string>> = {
  '/health': 'health',
  '/v1/models': 'models',
  '/v1/models/:id': 'models',
  '/v1/chat/completions': 'chat.completions',
  '/v1/messages': 'messages',
  '/v1/messages/count_tokens': 'messages.count_tokens',
  '/v1/responses': 'responses',
  '/v1/native/responses': 'responses',
  '/v1/embeddings': 'embeddings',
  '/v1/rerank': 'rerank',
  '/v1/audio/transcriptions': 'audio.transcriptions',
  '/v1/audio/speech': 'audio.speech',
};

/** Bounded `interface` label: the routing record's, else the route's, `manage`, `unmatched` or `other`. */
export function interfaceLabel(request: FastifyRequest): string {
  const routed = request.routing?.interfaceName;
  if (routed) return routed;
  const route = request.routeOptions.url;
  if (route === undefined) return 'unmatched';
  return interfaceOfRoute[route] ?? (route.startsWith('/v1/manage/') ? 'manage' : 'other');
}

/** Bounded `model` label: a catalogue model id, `unknown` for anything else, `none` when there was none. */
export function modelLabel(catalogue: Catalogue, model: string | undefined): string {
  if (model === undefined) return 'none';
  return catalogue.routes.has(model) ? model : 'unknown';
}

/** Bounded `code` label: a catalogue error code (or `client_closed_request`), `other` for a foreign string, `none` without an error. */
export function codeLabel(code: string | undefined): string {
  if (code === undefined) return 'none';
  return isErrorCode(code) || code === clientClosedRequest.code ? code : 'other';
}

/** Enforcement refusals by the catalogue code they are answered with. */
const rejectionReasons: Partial<Record<ErrorCode, 'rate_limit' | 'budget' | 'wallet'>> = {
  rate_limit_exceeded: 'rate_limit',
  budget_exceeded: 'budget',
  billing_limit_reached: 'wallet',
};

/**
 * Why enforcement refused a request, if it did. Only a request that made no supplier attempt
 * can have been refused by enforcement: a supplier's own 429 is also `rate_limit_exceeded`.
 */
export function rejectionReason(code: string | undefined, attempts: number): 'rate_limit' | 'budget' | 'wallet' | undefined {
  return code !== undefined && attempts === 0 && isErrorCode(code) ? rejectionReasons[code] : undefined;
}
