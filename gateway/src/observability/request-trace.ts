import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Span, type Tracer } from '@opentelemetry/api';
import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_SERVER_ADDRESS,
  ATTR_URL_PATH,
} from '@opentelemetry/semantic-conventions';
import {
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_PROVIDER_NAME,
  ATTR_GEN_AI_REQUEST_MODEL,
  ATTR_GEN_AI_RESPONSE_MODEL,
  ATTR_GEN_AI_SYSTEM,
  ATTR_GEN_AI_USAGE_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_OUTPUT_TOKENS,
} from '@opentelemetry/semantic-conventions/incubating';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ModelRoute, SupplierProtocol } from '../../../core/config/index.js';
import { injectTraceContext, traceContextFromHeaders } from '../../../core/telemetry/index.js';
import { answeringAttempt, isFailover, type AttemptRecord, type InterfaceName, type RoutingRecord } from '../pipeline/attempts.js';
import { interfaceLabel } from './request-labels.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The request's server span; absent when tracing is off. */
    trace?: RequestTrace;
  }
}

/** GenAI provider name of each supplier protocol (semantic conventions' well-known values). */
const providerOf = {
  openai: 'openai',
  'openai-responses': 'openai',
  anthropic: 'anthropic',
} as const satisfies Record<SupplierProtocol, string>;

/** GenAI operation of each interface (semconv values where one exists). */
const operationOf = {
  'chat.completions': 'chat',
  messages: 'chat',
  responses: 'chat',
  embeddings: 'embeddings',
  rerank: 'rerank',
  'audio.transcriptions': 'transcription',
  'audio.speech': 'speech',
} as const satisfies Record<InterfaceName, string>;

/** One supplier attempt's client span and the trace headers that name it to the supplier. */
export class AttemptSpan {
  /** `traceparent` (and `tracestate`) for the supplier request. */
  readonly headers: Record<string, string> = {};

  constructor(private readonly span: Span) {
    injectTraceContext(span, this.headers);
  }

  /** Closes the span with the attempt's outcome and, for the answering attempt, its token usage. */
  end(attempt: AttemptRecord, routing: RoutingRecord, route: ModelRoute): void {
    const span = this.span;
    span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, attempt.status);
    if (attempt.outcome === 'failed') {
      span.setAttribute(ATTR_ERROR_TYPE, attempt.code ?? 'unknown');
      span.setStatus({ code: SpanStatusCode.ERROR, message: attempt.code ?? 'failed' });
    } else {
      span.setAttribute(ATTR_GEN_AI_RESPONSE_MODEL, route.model.upstream);
    }
    if (routing.usage) {
      span.setAttribute(ATTR_GEN_AI_USAGE_INPUT_TOKENS, routing.usage.inputTokens);
      span.setAttribute(ATTR_GEN_AI_USAGE_OUTPUT_TOKENS, routing.usage.outputTokens);
    }
    span.end();
  }
}

/**
 * The server span of one request (continuing the client's `traceparent` when it sent one) and
 * the client spans of its supplier attempts, children of it. Created only when tracing is on,
 * so with tracing off the request path does no span work at all.
 */
export class RequestTrace {
  private readonly span: Span;
  private ended = false;

  constructor(
    private readonly tracer: Tracer,
    request: FastifyRequest,
  ) {
    const route = request.routeOptions.url;
    this.span = tracer.startSpan(
      route ? `${request.method} ${route}` : request.method,
      {
        kind: SpanKind.SERVER,
        attributes: {
          [ATTR_HTTP_REQUEST_METHOD]: request.method,
          [ATTR_URL_PATH]: request.url.split('?', 1)[0]!,
          ...(route !== undefined && { [ATTR_HTTP_ROUTE]: route }),
          'svc.request_id': String(request.id),
        },
      },
      traceContextFromHeaders(request.headers),
    );
  }

  /** The W3C trace id, for the request's log line. */
  get traceId(): string {
    return this.span.spanContext().traceId;
  }

  /** Starts the client span of attempt `index` (0 = first tried; a failover when not the preferred supplier). */
  startAttempt(route: ModelRoute, index: number, routing: RoutingRecord): AttemptSpan {
    const operation = routing.interfaceName ? operationOf[routing.interfaceName] : 'chat';
    const provider = providerOf[route.supplier.protocol];
    const attributes: Attributes = {
      [ATTR_GEN_AI_OPERATION_NAME]: operation,
      [ATTR_GEN_AI_PROVIDER_NAME]: provider,
      // The attribute older GenAI conventions (and many back ends) still read.
      [ATTR_GEN_AI_SYSTEM]: provider,
      [ATTR_GEN_AI_REQUEST_MODEL]: route.model.upstream,
      [ATTR_SERVER_ADDRESS]: new URL(route.supplier.baseUrl).hostname,
      'svc.model': route.model.id,
      'svc.supplier': route.supplier.name,
      'svc.region': route.supplier.region,
      'svc.failover': isFailover(routing, route.supplier.name),
      'svc.attempt': index,
    };
    const span = this.tracer.startSpan(
      `${operation} ${route.model.upstream}`,
      { kind: SpanKind.CLIENT, attributes },
      trace.setSpan(ROOT_CONTEXT, this.span),
    );
    return new AttemptSpan(span);
  }

  /** Closes the server span with what the request came to (idempotent: abort and response may both call it). */
  end(request: FastifyRequest, reply: FastifyReply | undefined): void {
    if (this.ended) return;
    this.ended = true;
    const span = this.span;
    const routing = request.routing;
    const answered = answeringAttempt(routing);
    span.setAttribute('svc.interface', interfaceLabel(request));
    if (routing?.model !== undefined) span.setAttribute('svc.model', routing.model);
    if (answered) {
      span.setAttribute('svc.supplier', answered.supplier);
      span.setAttribute('svc.region', answered.region);
      span.setAttribute('svc.failover', isFailover(routing!, answered.supplier));
    }
    if (routing?.usage) {
      span.setAttribute(ATTR_GEN_AI_USAGE_INPUT_TOKENS, routing.usage.inputTokens);
      span.setAttribute(ATTR_GEN_AI_USAGE_OUTPUT_TOKENS, routing.usage.outputTokens);
    }
    if (routing?.costUsd !== undefined) span.setAttribute('svc.cost_usd', routing.costUsd);
    const code = request.errorCode ?? (answered?.outcome === 'failed' ? answered.code : undefined);
    if (code !== undefined) span.setAttribute(ATTR_ERROR_TYPE, code);
    if (reply) {
      span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, reply.statusCode);
      // Server spans: only 5xx are the server's failure (a 4xx is the client's).
      if (reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR, message: code ?? String(reply.statusCode) });
    } else {
      span.setStatus({ code: SpanStatusCode.ERROR, message: 'client closed the connection' });
    }
    span.end();
  }
}
