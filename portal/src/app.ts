// createPortal: the one place the middleware order is written (request id and log → metrics →
// static → security headers → body parsers → session → same-origin → principal → features →
// 404 → error handler). No I/O here: server.ts opens everything and passes it in.
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import express, { type Express } from 'express';
import type { PortalDeps } from './deps.js';
import { authPagesRouter } from './features/auth/pages.js';
import { accountRouter } from './features/auth/routes.js';
import { AccountService } from './features/auth/service.js';
import { EmailRequestThrottle, LoginThrottle } from './features/auth/throttle.js';
import { formatUsd } from './web/usd.js';
import { methodNotAllowedOrNotFound } from './web/method-not-allowed.js';
import { dashboardRouter } from './features/dashboard/routes.js';
import { keysRouter } from './features/keys/routes.js';
import { activityRouter } from './features/activity/routes.js';
import { requestLogRouter } from './features/request-log/routes.js';
import { usageRouter } from './features/usage/routes.js';
import { modelsRouter } from './features/models/routes.js';
import { budgetsRouter } from './features/budgets/routes.js';
import { reportsRouter } from './features/reports/routes.js';
import { projectsRouter } from './features/projects/routes.js';
import { adminProjectsRouter } from './features/admin/projects.js';
import { apiTokensRouter } from './features/api-tokens/routes.js';
import { settingsRouter } from './features/settings/routes.js';
import { qualityRouter } from './features/quality/routes.js';
import { autorouterRouter } from './features/autorouter/routes.js';
import { adminInvitesRouter } from './features/admin/invites.js';
import { adminUsersRouter } from './features/admin/users.js';
import { adminDepartmentsRouter } from './features/admin/departments.js';
import { adminOrganisationsRouter } from './features/admin/organisations.js';
import { adminPromotionsRouter } from './features/admin/promotions.js';
import { adminOperationsRouter } from './features/admin/operations.js';
import { adminConversationsRouter } from './features/admin/conversations.js';
import { adminCatalogueRouter } from './features/admin/catalogue.js';
import { helpRouter } from './features/help/routes.js';
import { getStartedRouter } from './features/get-started/routes.js';
import { adminViewRouter } from './features/dashboard/admin-view.js';
import { billingRouter, billingWebhookRouter } from './features/billing/routes.js';
import { legalRouter } from './features/legal/routes.js';
import { ssoRouter } from './features/sso/routes.js';
import { inviteRouter } from './features/pages/invite.js';
import { pagesRouter } from './features/pages/routes.js';
import { errorHandler } from './web/errors.js';
import { layoutLocals } from './web/layout.js';
import { observeRequests, securityHeaders } from './web/observe.js';
import { refuseUnreadBodies, refuseUnstorableText } from './web/validation.js';
import { loadPrincipal } from './web/principal.js';
import { sameOriginCheck } from './web/same-origin.js';
import { sessionMiddleware } from './web/session.js';
import { traceRequests } from './web/trace.js';
import { typedValue } from './web/form-issues.js';

const viewsDir = fileURLToPath(new URL('../views/', import.meta.url));
const publicDir = fileURLToPath(new URL('../public/', import.meta.url));
// Chart.js from the installed package (a dependency), served from this origin: no CDN, no
// download at run time, and the CSP's script-src 'self' holds.
const chartJsDir = dirname(createRequire(import.meta.url).resolve('chart.js'));

/** Builds the portal's Express app from its dependencies. */
export function createPortal(deps: PortalDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('views', viewsDir);
  app.set('view engine', 'ejs');
  // Money is shown one way on every page (web/usd.ts): views call usd(…).
  app.locals.usd = formatUsd;
  // A refused form's fields are filled again with what was typed (web/form-issues.ts): views call typed(…).
  app.locals.typed = typedValue;
  // Behind the ingress the client address comes from X-Forwarded-For (login throttling per address),
  // believed only from the peers SVC_PORTAL_TRUST_PROXY names.
  app.set('trust proxy', deps.settings.SVC_PORTAL_TRUST_PROXY === 'none' ? false : deps.settings.SVC_PORTAL_TRUST_PROXY);
  // Express 5's simple parser: a repeated parameter becomes an array, which validation refuses.
  app.set('query parser', 'simple');

  app.use(observeRequests(deps.logger, deps.metrics, deps.clock));
  if (deps.tracer) app.use(traceRequests(deps.tracer));
  // First of all the rest: an error page for a request the body parsers refuse needs the layout too.
  app.use(layoutLocals);
  // Assets are fingerprint-free, so a day of caching with revalidation rather than immutable.
  app.use('/static', express.static(publicDir, { maxAge: '1d', etag: true, index: false, fallthrough: true }));
  app.get('/static/vendor/chart.umd.min.js', (_req, res) => res.sendFile('chart.umd.min.js', { root: chartJsDir, maxAge: '1d' }));
  const { settings } = deps;
  const https = settings.SVC_PORTAL_BASE_URL.startsWith('https://');
  app.use(
    securityHeaders(
      https,
      [...deps.oidcProviders.values()].map((p) => p.issuerOrigin),
    ),
  );
  // The processor's signed webhook reads its raw body, before the parsers and the same-origin check.
  app.use(billingWebhookRouter(deps));
  app.use(express.urlencoded({ extended: false, limit: '64kb' }));
  app.use(express.json({ limit: '256kb' }));
  app.use(refuseUnreadBodies);
  app.use(refuseUnstorableText);
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
  const emailThrottle = new EmailRequestThrottle(deps.store, settings.SVC_KEY_PEPPER, {
    perRecipient: settings.SVC_AUTH_EMAILS_PER_RECIPIENT,
    perClient: settings.SVC_AUTH_EMAILS_PER_CLIENT,
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
  app.use(
    accountRouter({
      accounts,
      emailThrottle,
      users: deps.users,
      settings,
      ssoSettings: settings,
      clock: deps.clock,
      metrics: deps.metrics,
      activity: deps.activity,
      logger: deps.logger,
    }),
  );
  app.use(ssoRouter(deps, deps.oidcProviders));
  app.use(inviteRouter(deps));
  app.use(legalRouter(deps));
  app.use(dashboardRouter(deps));
  app.use(keysRouter(deps));
  app.use(activityRouter(deps));
  app.use(usageRouter(deps));
  app.use(requestLogRouter(deps));
  app.use(modelsRouter(deps));
  app.use(apiTokensRouter(deps));
  app.use(projectsRouter(deps));
  app.use(reportsRouter(deps));
  app.use(budgetsRouter(deps));
  app.use(settingsRouter(deps, accounts));
  app.use(qualityRouter(deps));
  app.use(autorouterRouter(deps));
  // Invite routes first: /dashboard/admin/users/invite is not a user id.
  app.use(adminInvitesRouter(deps));
  app.use(adminUsersRouter(deps));
  app.use(adminOrganisationsRouter(deps));
  app.use(adminDepartmentsRouter(deps));
  app.use(adminPromotionsRouter(deps));
  app.use(adminOperationsRouter(deps));
  app.use(adminConversationsRouter(deps));
  app.use(adminProjectsRouter(deps));
  app.use(adminCatalogueRouter(deps));
  app.use(helpRouter(deps));
  app.use(getStartedRouter(deps));
  app.use(adminViewRouter(deps));
  app.use(billingRouter(deps));
  app.use(authPagesRouter(deps));

  // A path no route answered: 405 with Allow when it exists with other methods, else 404.
  app.use(methodNotAllowedOrNotFound(app));
  app.use(errorHandler(deps.logger));
  return app;
}
