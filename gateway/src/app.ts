import type { ServerResponse } from 'node:http';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { ApiError } from '../../core/errors/index.js';
import { accessLoggerOf } from '../../core/telemetry/index.js';
import { authenticate } from './auth/authenticate.js';
import './auth/request-caller.js';
import type { GatewayDeps } from './deps.js';
import { inviteBodiesOnlyWhenRead } from './http/expect-continue.js';
import { answerClientError, answerOutsideRoutes, closeAfterEarlyAnswer, settleEarlyAnswer, newRequestId } from './http/client-errors.js';
import { registerJsonBodyParser } from './http/json-body.js';
import { fromFrameworkError, maxPathParameterLength, sendError } from './http/render-error.js';
import { RouteMethods } from './http/route-methods.js';
import { registerSpeechRoutes } from './interfaces/audio/speech-route.js';
import { registerTranscriptionRoutes } from './interfaces/audio/transcriptions-route.js';
import { registerChatCompletionRoutes } from './interfaces/chat-completions/route.js';
import { registerEmbeddingsRoutes } from './interfaces/embeddings/route.js';
import { registerKeyManagementRoutes } from './interfaces/manage/keys-route.js';
import { registerTokenManagementRoutes } from './interfaces/manage/tokens-route.js';
import { registerWalletRoutes } from './interfaces/manage/wallets-route.js';
import { registerMessagesRoutes } from './interfaces/messages/route.js';
import { registerModelRoutes } from './interfaces/models/route.js';
import { registerNativeResponsesRoutes } from './interfaces/native-responses/route.js';
import { clientClosedRequest } from './observability/request-labels.js';
import { recordRequestMetrics, recordRoutingMetrics } from './observability/request-metrics.js';
import { RequestTrace } from './observability/request-trace.js';
import { registerRerankRoutes } from './interfaces/rerank/route.js';
import { answeringAttempt, isFailover } from './pipeline/attempts.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set once the request's metrics and access line are written. */
    finished?: boolean;
    /** Counted in svc_gateway_requests_in_flight (its onRequest hook ran) until finished. */
    inFlight?: boolean;
  }
}

/** Routes answered without a key. */
const publicPaths = new Set(['/health']);
/**
 * Routes where the Anthropic-style `x-api-key` header is accepted as well as Bearer: the messages
 * interface, and the model list and model retrieval both SDK families call (`/v1/models/{id}` too).
 */
const xApiKeyPaths = new Set(['/v1/messages', '/v1/messages/count_tokens', '/v1/models']);

/** Builds the gateway HTTP app; main.ts listens, tests use `app.inject` or listen on port 0. */
export function createApp(deps: GatewayDeps): FastifyInstance {
  const app = Fastify({
    // pino's Logger is a FastifyBaseLogger; the cast keeps the app typed as a plain FastifyInstance.
    loggerInstance: deps.logger as FastifyBaseLogger,
    // One log line per request comes from our onResponse hook, with the routing facts.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: deps.bodyLimitBytes,
    // Deadlines for receiving a request (Node's server enforces them and reports a clientError):
    // a client trickling its headers or body cannot hold a connection open indefinitely.
    requestTimeout: deps.bodyTimeoutMs,
    http: {
      headersTimeout: Math.min(deps.headersTimeoutMs, deps.bodyTimeoutMs),
      // How often Node checks those deadlines: the finer, the closer to the setting they fire.
      connectionsCheckingInterval: Math.max(25, Math.min(1_000, Math.floor(Math.min(deps.headersTimeoutMs, deps.bodyTimeoutMs) / 4))),
      // Node would answer a missing Host with a bare 400; the onRequest hook answers it instead.
      requireHostHeader: false,
    },
    clientErrorHandler: answerClientError,
    // Path parameters are at most ~140 characters (a payer id); past this the answer is 414.
    routerOptions: { maxParamLength: maxPathParameterLength },
    // Failures of URL decoding and routing, before any hook runs: answered in the catalogue shape.
    frameworkErrors: (error, request, reply) => {
      request.errorCode = fromFrameworkError(error).code;
      // Before any hook: the onRequest hook that names every answer's request id has not run.
      void reply.header('x-request-id', request.id);
      void sendError(reply, error);
    },
    genReqId: () => newRequestId(),
    requestIdHeader: false,
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    keepAliveTimeout: 65_000,
    // No per-request child logger: the request line carries request_id itself, and creating a
    // pino child for every request is measurable overhead on the hot path.
    childLoggerFactory: (logger) => logger,
  });
  let draining = false;
  /**
   * Answers under way, until their response closes: when the drain starts, those not begun are
   * told to close their connection. A keep-alive connection whose answer ended during the drain
   * was reused by its client while the idle sweep closed it (server.ts), and the next request got
   * no answer at all instead of 503 pod_draining (outside probe: 53 of 70 requests sent after
   * SIGTERM on reused connections).
   */
  const answersUnderWay = new Set<ServerResponse>();
  answerOutsideRoutes(app.server);
  inviteBodiesOnlyWhenRead(app, app.server);

  registerJsonBodyParser(app);

  // Created before any route is registered: it learns each path's methods as routes are added.
  const routeMethods = new RouteMethods(app);
  /** The answer to a request no route serves: 405 with Allow when the path exists with other methods, else 404. */
  const pathNotServed = (request: FastifyRequest, reply: FastifyReply): ApiError => {
    const path = request.url.split('?', 1)[0]!;
    const allowed = routeMethods.allowed(path);
    if (allowed.length > 0) {
      // The path exists, only not with this method (RFC 9110 §15.5.6: 405 lists the methods in Allow).
      void reply.header('allow', allowed.join(', '));
      return new ApiError('method_not_allowed', {
        humanMessage: `${path} does not answer ${request.method}; it answers ${allowed.join(', ')}`,
      });
    }
    return new ApiError('not_found', { humanMessage: `There is no ${request.method} ${path} on this gateway` });
  };

  // Decided once here: with tracing off these hooks do not exist, so requests pay nothing.
  const tracer = deps.telemetry.tracer;
  if (tracer) {
    // First hook, so requests refused by authentication have their span too.
    app.addHook('onRequest', async (request) => {
      request.trace = new RequestTrace(tracer, request);
    });
    app.addHook('onRequestAbort', async (request) => {
      request.trace?.end(request, undefined);
    });
  }

  // Built once: every request's key is compared with the admin key's digest, decoded here.
  const credentials = { pepper: deps.pepper, adminDigest: Buffer.from(deps.adminKeyHash, 'hex'), keys: deps.keys };
  const inFlight = deps.telemetry.inFlight;
  app.addHook('onRequest', async (request, reply) => {
    inFlight.count++;
    request.inFlight = true;
    // Fastify runs no onResponse for a request whose client left before the response ended
    // (mid-stream included; its onRequestAbort misses clients that left after sending the body):
    // such a request is counted and logged here, as nginx's 499 "client closed request".
    answersUnderWay.add(reply.raw);
    reply.raw.once('close', () => {
      answersUnderWay.delete(reply.raw);
      if (reply.raw.writableFinished) return;
      // Closed after its stream's error event: recorded as the answer it got, not as a 499 — once
      // the pipeline has recorded that answer (its attempt, usage, cost), when the end is released.
      if (request.streamErrorSent && request.inPipeline) {
        request.afterPipeline = () => {
          request.trace?.end(request, reply);
          finish(request, reply, reply.raw.statusCode);
        };
        return;
      }
      request.clientClosed = true;
      request.trace?.end(request, undefined);
      // The request line and its count now (it names the supplier left working); its attempts,
      // tokens and cost once the pipeline has recorded them.
      const routingLater = request.inPipeline === true;
      finish(request, reply, clientClosedRequest.status, routingLater);
      if (routingLater) request.afterPipeline = () => recordRoutingMetrics(deps.telemetry.metrics, deps.catalogue, request, reply);
    });
    reply.header('x-request-id', request.id);
    // The Anthropic SDK reads its request id from `request-id`.
    if (request.url.startsWith('/v1/messages')) reply.header('request-id', request.id);
    const path = request.url.split('?', 1)[0]!;
    if (request.headers.host === undefined && request.raw.httpVersion === '1.1') {
      // Closed after the answer, as for other malformed requests: left open, the connection
      // answered nothing more (outside probe).
      reply.header('connection', 'close');
      throw new ApiError('invalid_request', { param: 'host', humanMessage: 'An HTTP/1.1 request must carry a Host header' });
    }
    if (draining && path !== '/health') {
      reply.header('connection', 'close');
      throw new ApiError('pod_draining');
    }
    if (publicPaths.has(path)) return;
    request.caller = await authenticate(request.raw, { xApiKey: xApiKeyPaths.has(path) || path.startsWith('/v1/models/') }, credentials);
    // A path the gateway does not have (or not with this method) is answered here, after
    // authentication and before fastify reads and parses the body for its not-found route: a
    // broken body there is no reason to answer anything but 404 or 405. `is404` is a property read.
    if (request.is404) throw pathNotServed(request, reply);
  });

  const accessLog = accessLoggerOf(deps.logger, deps.telemetry.logPromptContent);
  /** Metrics and the access line of a request that ended: answered, or abandoned by its client. */
  const finish = (request: FastifyRequest, reply: FastifyReply, status: number, routingLater = false) => {
    // Once per request, whichever of the two hooks comes first.
    if (request.finished) return;
    request.finished = true;
    if (request.inFlight) inFlight.count--;
    const caller = request.caller;
    const routing = request.routing;
    const answered = answeringAttempt(routing);
    recordRequestMetrics(deps.telemetry.metrics, deps.catalogue, request, reply, status, routingLater);
    accessLog.info(
      {
        request_id: request.id,
        trace_id: request.trace?.traceId,
        method: request.method,
        path: request.routeOptions.url ?? request.url.split('?', 1)[0],
        status,
        // The catalogue code the client got (a stream cut after its first byte: its attempt's).
        code:
          status === clientClosedRequest.status
            ? clientClosedRequest.code
            : (request.errorCode ?? (answered?.outcome === 'failed' ? answered.code : undefined)),
        key_id: caller?.kind === 'key' ? caller.key.id : caller?.kind,
        model: routing?.model,
        supplier: answered?.supplier,
        failover: routing ? isFailover(routing, answered?.supplier) : undefined,
        attempts: routing?.attempts.length ? routing.attempts : undefined,
        // The client left while a supplier was still working on its call (499): which one.
        in_flight_supplier: routing?.inFlightSupplier,
        input_tokens: routing?.usage?.inputTokens,
        output_tokens: routing?.usage?.outputTokens,
        cost_usd: routing?.costUsd,
        // A supplier over-reported its usage and was charged at the bound: what it reported.
        usage_capped: routing?.usageCapped,
        // The supplier reported no usage for these sides: the gateway's own count was charged.
        usage_counted: routing?.usageCounted,
        duration_ms: Math.round(reply.elapsedTime),
        // Prompts are customer data: in the log only when SVC_LOG_PROMPTS says so.
        prompt: deps.telemetry.logPromptContent && routing ? request.body : undefined,
      },
      'request',
    );
  };
  app.addHook('onResponse', async (request, reply) => {
    // Answered before the body finished arriving (refused key, body too large, …).
    if (!request.raw.complete) closeAfterEarlyAnswer(request.raw);
    request.trace?.end(request, reply);
    finish(request, reply, reply.statusCode);
  });

  app.setErrorHandler((error, request, reply) => {
    if (!(error instanceof ApiError) || error.status >= 500) {
      request.log.warn({ request_id: request.id, err: error instanceof ApiError ? (error.cause ?? error) : error }, 'request failed');
    }
    const apiError = fromFrameworkError(error, request);
    request.errorCode = apiError.code;
    // Refused before its body was read (a key refused, a body over the limit): the connection
    // stays open only if the body is in, and the answer says which (the client must read it).
    // Synchronous unless a declared body may still be in the bytes received (one turn's wait).
    const settling = settleEarlyAnswer(request.raw, reply);
    return settling ? settling.then(() => sendError(reply, apiError)) : sendError(reply, apiError);
  });

  // Normally answered by the onRequest hook (pathNotServed); kept for whatever reaches the router's default.
  app.setNotFoundHandler((request, reply) => {
    const error = pathNotServed(request, reply);
    request.errorCode = error.code;
    return sendError(reply, error);
  });

  app.get('/health', async (_request, reply) => {
    if (draining) return reply.code(503).send({ status: 'draining' });
    return { status: 'ok' };
  });
  registerModelRoutes(app, deps);
  registerChatCompletionRoutes(app, deps);
  registerMessagesRoutes(app, deps);
  registerNativeResponsesRoutes(app, deps);
  registerEmbeddingsRoutes(app, deps);
  registerRerankRoutes(app, deps);
  registerTranscriptionRoutes(app, deps);
  registerSpeechRoutes(app, deps);
  registerKeyManagementRoutes(app, deps, deps.keyRepository);
  registerTokenManagementRoutes(app, deps, deps.keyRepository);
  registerWalletRoutes(app, deps.wallets);

  // Readiness flips before the listener closes, so load balancers stop sending new work.
  app.addHook('preClose', async () => {
    draining = true;
    // Node then sends `Connection: close` and closes the connection after the answer. An answer
    // already begun (a stream) keeps the keep-alive it announced: its connection is closed by the
    // idle sweep once it ends.
    for (const answer of answersUnderWay) if (!answer.headersSent) answer.shouldKeepAlive = false;
  });
  return app;
}
