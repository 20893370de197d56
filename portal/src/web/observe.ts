// First in the chain: a request id, then on finish one JSON log line and the request metrics.
// The line carries the route pattern (the path only for unmatched requests, with long segments cut
// out, never the query, where tokens travel) and never a header, body or cookie, so no password, token or session id
// can reach the log.
import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import type { PortalMetrics } from '../../../core/telemetry/index.js';

const requestIdPattern = /^[A-Za-z0-9._-]{1,64}$/;

/** The longest path segment logged as it is; the portal's secrets in paths (invitation tokens) are 43. */
const longestLoggedSegment = 19;

/**
 * The path of a request no route matched, for the log: a request refused before routing (a
 * foreign origin, a body that does not parse) to `/invite/<token>/accept` is unmatched too, so
 * any segment long enough to be a secret is replaced by its length.
 */
export function loggablePath(path: string): string {
  return path
    .split('/')
    .map((segment) => (segment.length > longestLoggedSegment ? `:redacted(${segment.length})` : segment))
    .join('/');
}

/** Request id (kept from a trusted-looking `x-request-id`, else new), access log line and metrics. */
export function observeRequests(logger: Logger, metrics: PortalMetrics, clock: () => number) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const given = req.get('x-request-id');
    const requestId = given && requestIdPattern.test(given) ? given : randomUUID();
    res.locals.requestId = requestId;
    res.set('x-request-id', requestId);
    const started = clock();
    res.on('finish', () => {
      // The route pattern, never the raw path, so ids and tokens do not explode the label set.
      const route = req.route ? `${req.baseUrl}${String(req.route.path)}` : 'unmatched';
      const seconds = (clock() - started) / 1000;
      metrics.requests.inc({ route, method: req.method, status: String(res.statusCode) });
      metrics.requestDuration.observe({ route, method: req.method }, seconds);
      logger.info(
        {
          requestId,
          // The same field name as the gateway's log line, so one search follows a trace across both.
          ...(res.locals.traceId ? { trace_id: res.locals.traceId as string } : {}),
          method: req.method,
          route,
          // The path only when no route matched (a matched one may hold a token: /invite/:token), secrets cut out.
          ...(req.route ? {} : { path: loggablePath(req.path) }),
          status: res.statusCode,
          durationMs: Math.round(seconds * 1000),
          userId: res.locals.user?.id,
        },
        'request',
      );
    });
    next();
  };
}

/**
 * Security headers on every answer: no framing, no sniffing, a strict referrer and a CSP without
 * inline script. `formTargets` are the identity providers' origins: the sign-up form's
 * accept-terms post redirects there, and Chromium applies form-action to that redirect.
 */
export function securityHeaders(https: boolean, formTargets: readonly string[] = []) {
  const formAction = ["'self'", ...formTargets].join(' ');
  return (_req: Request, res: Response, next: NextFunction): void => {
    res.set({
      'content-security-policy': `default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action ${formAction}`,
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY',
      'referrer-policy': 'strict-origin-when-cross-origin',
      ...(https ? { 'strict-transport-security': 'max-age=31536000' } : {}),
    });
    next();
  };
}
