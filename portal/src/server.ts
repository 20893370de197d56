// Opens what the portal needs (database, store, metrics), builds the app and listens.
import { openJobRunner, workPortalJobs } from './jobs.js';
import { expireDuePromotions } from './features/admin/promotions.js';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import { ApiError, errorResponseHeaders, renderErrorBody } from '../../core/errors/index.js';
import { clientErrorAnswerer } from '../../core/errors/client-errors.js';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import {
  buildCatalogue,
  readCatalogueDocument,
  type Catalogue,
  type PortalSettings,
  type ResolvedPortalSettings,
} from '../../core/config/index.js';
import { LiveCatalogue } from '../../core/catalogue/index.js';
import { databaseTargetFromSettings, openDatabase, type Database } from '../../core/db/index.js';
import { bindAtStart, countStoreErrors, openStore, type Store } from '../../core/store/index.js';
import {
  createLogger,
  createMetricsRegistry,
  createPortalMetrics,
  sqlStateClassLabel,
  startMetricsServer,
  type MetricsServer,
  type Tracing,
} from '../../core/telemetry/index.js';
import { InviteRepository, OneTimeTokens, SessionRepository, UserRepository } from '../../core/identity/index.js';
import { ActivityLog } from '../../core/activity/index.js';
import { createPortal } from './app.js';
import { portalErrorBody } from './web/errors.js';
import { createMailer } from './mail/mailer.js';
import { createOidcProviders } from './features/sso/oidc.js';
import { startBilling } from './features/billing/runtime.js';
import type { PortalDeps } from './deps.js';

/** A listening portal and how to stop it. */
export interface RunningPortal {
  url: string;
  port: number;
  metricsUrl: string | undefined;
  deps: PortalDeps;
  stop(): Promise<void>;
}

/** Pieces a caller (npm start, tests) already owns; the portal then leaves them open at stop. */
export interface PortalOverrides {
  database?: Database;
  store?: Store;
  logger?: Logger;
  clock?: () => number;
  catalogue?: Catalogue;
  /** Where outbox-mode email links are announced (default: the console). */
  announce?: (line: string) => void;
  /** Tracing started by the entry point (main.ts) or a test; default off. */
  tracing?: Tracing;
  /** Serve /metrics on an ephemeral port whatever SVC_METRICS_PORT says (tests). */
  metricsOnEphemeralPort?: boolean;
}

/**
 * Starts the portal on PORTAL_PORT (0: any free port). The socket listens first, so that without
 * SVC_PORTAL_BASE_URL the public address can be the one actually bound; the app is attached after.
 */
export async function startPortal(given: PortalSettings, overrides: PortalOverrides = {}): Promise<RunningPortal> {
  const server: Server = createServer();
  // Until the app is attached (migrations, billing, … take seconds), a request is told so at once
  // instead of being held on an accepted connection that nothing answers.
  server.on('request', answerStarting);
  // A request Node's parser refuses (a 100 KB URL, headers over its limit, bytes that are not
  // HTTP) gets the catalogue's JSON answer and id, not Node's bare status line with no body.
  server.on('clientError', clientErrorAnswerer('portal', randomUUID, portalErrorBody));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(given.PORTAL_PORT, given.SVC_HOST, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const host = given.SVC_HOST === '0.0.0.0' || given.SVC_HOST === '::' ? '127.0.0.1' : given.SVC_HOST;
  const settings: ResolvedPortalSettings = { ...given, SVC_PORTAL_BASE_URL: given.SVC_PORTAL_BASE_URL ?? `http://${host}:${port}` };
  try {
    return await startOnServer(server, port, host, settings, overrides);
  } catch (error) {
    server.close();
    throw error;
  }
}

async function startOnServer(
  server: Server,
  port: number,
  host: string,
  settings: ResolvedPortalSettings,
  overrides: PortalOverrides,
): Promise<RunningPortal> {
  const logger = overrides.logger ?? createLogger({ service: 'portal', level: settings.LOG_LEVEL });
  const registry = createMetricsRegistry();
  const metrics = createPortalMetrics(registry);
  const database = overrides.database ?? (await openDatabase(databaseTargetFromSettings(settings)));
  await database.migrate();
  database.knex.on('query-error', (error: unknown) => metrics.databaseErrors.inc({ class: sqlStateClassLabel(error) }));
  const store = countStoreErrors(overrides.store ?? openStore(settings), (operation) => metrics.storeErrors.inc({ operation }));
  // Before anything reads or counts in the store: a prefix another installation uses is refused.
  await bindAtStart(database, store, {
    rebind: settings.SVC_STORE_REBIND,
    warn: (message) => logger.warn(message),
    owned: { store: !overrides.store, database: !overrides.database },
  });
  // The catalogue: the file (or the one a test gives), or (SVC_CATALOG_SOURCE=database) the stored
  // one, seeded from the file when empty and followed live, as the gateways do.
  const catalogueDocument = overrides.catalogue ? undefined : readCatalogueDocument(settings.SVC_CATALOG);
  const fileCatalogue = overrides.catalogue ?? buildCatalogue(catalogueDocument, process.env, `catalogue ${settings.SVC_CATALOG}`);
  const liveCatalogue =
    settings.SVC_CATALOG_SOURCE === 'database'
      ? new LiveCatalogue(fileCatalogue, { knex: database.knex, store, env: process.env, pepper: settings.SVC_KEY_PEPPER, logger })
      : undefined;
  await liveCatalogue?.start(catalogueDocument);
  const mailer = createMailer({
    smtpUrl: settings.SVC_SMTP_URL,
    from: settings.SVC_MAIL_FROM,
    dataDir: settings.SVC_DATA_DIR,
    announce: overrides.announce ?? ((line) => console.log(line)),
    logger,
  });
  const jobs = await openJobRunner(database, logger);
  if (settings.SVC_PORTAL_WORKER)
    await workPortalJobs(jobs, {
      knex: database.knex,
      logger,
      dataDir: settings.SVC_DATA_DIR,
      clock: overrides.clock ?? Date.now,
      mailer,
      baseUrl: settings.SVC_PORTAL_BASE_URL,
    });
  const core: Omit<PortalDeps, 'billing'> = {
    jobs,
    settings,
    catalogue: liveCatalogue ?? fileCatalogue,
    database: database.knex,
    store,
    logger,
    metrics,
    clock: overrides.clock ?? Date.now,
    gatewayUrlHint: settings.SVC_GATEWAY_PUBLIC_URL,
    tracer: overrides.tracing?.tracer,
    users: new UserRepository(database.knex),
    tokens: new OneTimeTokens(database.knex, settings.SVC_KEY_PEPPER),
    sessions: new SessionRepository(database.knex),
    invites: new InviteRepository(database.knex, settings.SVC_KEY_PEPPER),
    activity: new ActivityLog(database.knex),
    oidcProviders: createOidcProviders(settings),
    mailer,
  };
  const deps: PortalDeps = { ...core, billing: await startBilling({ ...core, knex: database.knex }) };
  const app = createPortal(deps);
  // Reads ignore expired sessions already; this only keeps the table small.
  const purge = setInterval(() => {
    deps.sessions.purgeExpired(new Date(deps.clock())).catch((error: unknown) => logger.warn({ err: error }, 'session purge failed'));
  }, 10 * 60_000);
  purge.unref();
  // Promotion grants past their expiry give back their unspent part (core/promotions).
  const promotions = setInterval(() => {
    expireDuePromotions(deps).catch((error: unknown) => logger.warn({ err: error }, 'promotion expiry sweep failed; retried next minute'));
  }, 60_000);
  promotions.unref();
  server.off('request', answerStarting);
  server.on('request', app);
  const metricsServer: MetricsServer | undefined =
    overrides.metricsOnEphemeralPort || settings.SVC_METRICS_PORT !== 0
      ? await startMetricsServer(registry, {
          host: settings.SVC_HOST,
          port: overrides.metricsOnEphemeralPort ? 0 : settings.SVC_METRICS_PORT,
        })
      : undefined;

  let stopping: Promise<void> | undefined;
  return {
    url: `http://${host}:${port}`,
    port,
    metricsUrl: metricsServer?.url,
    deps,
    stop: () =>
      (stopping ??= (async () => {
        const grace = setTimeout(() => server.closeAllConnections(), settings.SVC_SHUTDOWN_GRACE_MS);
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
        });
        clearTimeout(grace);
        clearInterval(purge);
        clearInterval(promotions);
        await liveCatalogue?.stop();
        await metricsServer?.close();
        await deps.billing.stop();
        await jobs.stop();
        // Mail handed over before the stop (a receipt, a verification) leaves first: bounded by the SMTP timeouts.
        await deps.mailer.settled();
        deps.mailer.close();
        if (!overrides.store) await store.close();
        if (!overrides.database) await database.close();
      })()),
  };
}

/** 503 service_unavailable (Retry-After 2) while the portal starts: a page that reloads itself, or the catalogue JSON. */
function answerStarting(request: IncomingMessage, response: ServerResponse): void {
  const error = new ApiError('service_unavailable', {
    humanMessage: 'The portal is starting; try again in a moment',
    retryAfterSeconds: 2,
  });
  const html = (request.headers.accept ?? '').includes('text/html');
  response.writeHead(error.status, {
    ...errorResponseHeaders(error),
    'content-type': html ? 'text/html; charset=utf-8' : 'application/json; charset=utf-8',
    'cache-control': 'no-store',
    connection: 'close',
  });
  response.end(
    html
      ? '<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="2"><title>Starting</title><p>The portal is starting; this page reloads in a moment.</p>'
      : JSON.stringify(renderErrorBody(error)),
  );
  request.resume();
}
