// createPortal: the one place the middleware order is written (request id and log → metrics →
// static → security headers → body parsers → session → same-origin → principal → features →
// 404 → error handler). No I/O here: server.ts opens everything and passes it in.
import { fileURLToPath } from 'node:url';
import express, { type Express } from 'express';
import { ApiError } from '../../core/errors/index.js';
import type { PortalDeps } from './deps.js';
import { authPagesRouter } from './features/auth/pages.js';
import { pagesRouter } from './features/pages/routes.js';
import { errorHandler } from './web/errors.js';
import { layoutLocals } from './web/layout.js';
import { observeRequests, securityHeaders } from './web/observe.js';

const viewsDir = fileURLToPath(new URL('../views/', import.meta.url));
const publicDir = fileURLToPath(new URL('../public/', import.meta.url));

/** Builds the portal's Express app from its dependencies. */
export function createPortal(deps: PortalDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('views', viewsDir);
  app.set('view engine', 'ejs');
  // Behind the ingress the client address comes from X-Forwarded-For (login throttling per address).
  app.set('trust proxy', 'loopback, linklocal, uniquelocal');
  // Express 5's simple parser: a repeated parameter becomes an array, which validation refuses.
  app.set('query parser', 'simple');

  app.use(observeRequests(deps.logger, deps.metrics, deps.clock));
  // Assets are fingerprint-free, so a day of caching with revalidation rather than immutable.
  app.use('/static', express.static(publicDir, { maxAge: '1d', etag: true, index: false, fallthrough: true }));
  app.use(securityHeaders(deps.settings.SVC_PORTAL_BASE_URL.startsWith('https://')));
  app.use(express.urlencoded({ extended: false, limit: '64kb' }));
  app.use(express.json({ limit: '256kb' }));
  app.use(layoutLocals);
  app.get('/health', (_req, res) => {
    res.json({ status: 'ok' });
  });

  app.use(pagesRouter(deps));
  app.use(authPagesRouter(deps));

  app.use((_req, _res, next) => next(new ApiError('not_found', { humanMessage: 'There is no page at this address' })));
  app.use(errorHandler(deps.logger));
  return app;
}
