// One SERVER span per portal request, continuing the browser's or the ingress's `traceparent`,
// named and labelled by the route pattern (never the raw path: /invite/:token and
// /verify-email?token=… carry secrets). Tracing off (no exporter configured) means no tracer and
// this middleware is not installed at all.
import { SpanKind, SpanStatusCode, type Tracer } from '@opentelemetry/api';
import {
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_ERROR_TYPE,
} from '@opentelemetry/semantic-conventions';
import type { NextFunction, Request, Response } from 'express';
import { traceContextFromHeaders } from '../../../core/telemetry/index.js';

/** The route pattern Express matched, or `unmatched` (the same rule as the access log). */
export function routeOf(req: Request): string {
  return req.route ? `${req.baseUrl}${String(req.route.path)}` : 'unmatched';
}

/** Starts the request's span; its id goes to `res.locals.traceId` for the access log line. */
export function traceRequests(tracer: Tracer) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const parent = traceContextFromHeaders(req.headers);
    const span = tracer.startSpan(
      req.method,
      {
        kind: SpanKind.SERVER,
        attributes: { [ATTR_HTTP_REQUEST_METHOD]: req.method, 'svc.request_id': String(res.locals.requestId ?? '') },
      },
      parent,
    );
    res.locals.traceId = span.spanContext().traceId;
    const end = (): void => {
      const route = routeOf(req);
      span.updateName(`${req.method} ${route}`);
      span.setAttribute(ATTR_HTTP_ROUTE, route);
      span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, res.statusCode);
      const code = res.locals.errorCode as string | undefined;
      if (code) span.setAttribute(ATTR_ERROR_TYPE, code);
      // Server spans are errors for 5xx only; a 4xx is the client's mistake (semantic conventions).
      if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    };
    // `close` also covers a client that went away before the answer finished.
    res.once('close', end);
    next();
  };
}
