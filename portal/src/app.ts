// createPortal: the one place the middleware order is written (request id and log → metrics →
// static → security headers → body parsers → session → same-origin → principal → features →
// 404 → error handler). No I/O here: server.ts opens everything and passes it in.
import { fileURLToPath } from 'node:url';
import express, { type Express } from 'express';
import { ApiError } from '../../core/errors/index.js';
import type { PortalDeps } from './deps.js';
import { authPagesRouter } from './features/auth/pages.js';
import { accountRouter } from './features/auth/routes.js';
import { AccountService } from './features/auth/service.js';
import { LoginThrottle } from './features/auth/throttle.js';
import { dashboardRouter } from './features/dashboard/routes.js';
import { legalRouter } from './features/legal/routes.js';
import { ssoRouter } from './features/sso/routes.js';
import { inviteRouter } from './features/pages/invite.js';
import { pagesRouter } from './features/pages/routes.js';
import { errorHandler } from './web/errors.js';
import { layoutLocals } from './web/layout.js';
import { observeRequests, securityHeaders } from './web/observe.js';
import { loadPrincipal } from './web/principal.js';
import { sameOriginCheck } from './web/same-origin.js';
import { sessionMiddleware } from './web/session.js';

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
  const { settings } = deps;
  const https = settings.SVC_PORTAL_BASE_URL.startsWith('https://');
  app.use(
    securityHeaders(
      https,
      [...deps.oidcProviders.values()].map((p) => p.issuerOrigin),
    ),
  );
  app.use(express.urlencoded({ extended: false, limit: '64kb' }));
  app.use(express.json({ limit: '256kb' }));
  app.use(layoutLocals);
  app.get('/health', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.use(
    sessionMiddleware({
      sessions: deps.sessions,
      pepper: settings.SVC_KEY_PEPPER,
      idleMs: settings.SVC_PORTAL_SESSION_IDLE_MS,
      secure: https,
    }),
  );
  app.use(sameOriginCheck(settings.SVC_PORTAL_BASE_URL));
  app.use(loadPrincipal(deps.users, deps.clock, settings.SVC_PORTAL_SESSION_ABSOLUTE_MS));

  const throttle = new LoginThrottle(deps.store, settings.SVC_KEY_PEPPER, {
    perAccount: settings.SVC_LOGIN_MAX_FAILURES_PER_ACCOUNT,
    perAddress: settings.SVC_LOGIN_MAX_FAILURES_PER_ADDRESS,
    windowMs: settings.SVC_LOGIN_WINDOW_MS,
  });
  const accounts = new AccountService({
    users: deps.users,
    tokens: deps.tokens,
    sessions: deps.sessions,
    mailer: deps.mailer,
    throttle,
    baseUrl: settings.SVC_PORTAL_BASE_URL,
    ownerEmail: settings.SVC_OWNER_EMAIL,
    legalVersion: settings.SVC_LEGAL_VERSION,
    clock: deps.clock,
  });

  app.use(pagesRouter(deps));
  app.use(accountRouter({ accounts, users: deps.users, settings, ssoSettings: settings, clock: deps.clock, metrics: deps.metrics }));
  app.use(ssoRouter(deps, deps.oidcProviders));
  app.use(inviteRouter(deps));
  app.use(legalRouter(deps));
  app.use(dashboardRouter(deps));
  app.use(authPagesRouter(deps));

  app.use((_req, _res, next) => next(new ApiError('not_found', { humanMessage: 'There is no page at this address' })));
  app.use(errorHandler(deps.logger));
  return app;
}
