// Opens what the portal needs (database, store, metrics), builds the app and listens.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { loadCatalogue, type Catalogue, type PortalSettings } from '../../core/config/index.js';
import { databaseTargetFromSettings, openDatabase, type Database } from '../../core/db/index.js';
import { countStoreErrors, openStore, type Store } from '../../core/store/index.js';
import { createLogger, createMetricsRegistry, createPortalMetrics, sqlStateClassLabel, startMetricsServer, type MetricsServer } from '../../core/telemetry/index.js';
import { createPortal } from './app.js';
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
  /** Serve /metrics on an ephemeral port whatever SVC_METRICS_PORT says (tests). */
  metricsOnEphemeralPort?: boolean;
}

/** Starts the portal on PORTAL_PORT (0: any free port). */
export async function startPortal(settings: PortalSettings, overrides: PortalOverrides = {}): Promise<RunningPortal> {
  const logger = overrides.logger ?? createLogger({ service: 'portal', level: settings.LOG_LEVEL });
  const registry = createMetricsRegistry();
  const metrics = createPortalMetrics(registry);
  const database = overrides.database ?? (await openDatabase(databaseTargetFromSettings(settings)));
  await database.migrate();
  database.knex.on('query-error', (error: unknown) => metrics.databaseErrors.inc({ class: sqlStateClassLabel(error) }));
  const store = countStoreErrors(overrides.store ?? openStore(settings), (operation) => metrics.storeErrors.inc({ operation }));
  const deps: PortalDeps = {
    settings,
    catalogue: overrides.catalogue ?? loadCatalogue(settings.SVC_CATALOG, process.env),
    database: database.knex,
    store,
    logger,
    metrics,
    clock: overrides.clock ?? Date.now,
    gatewayUrlHint: settings.SVC_GATEWAY_PUBLIC_URL,
  };
  const app = createPortal(deps);
  const server: Server = await new Promise((resolve, reject) => {
    const s = app.listen(settings.PORTAL_PORT, settings.SVC_HOST, (error?: Error) => (error ? reject(error) : resolve(s)));
  });
  const port = (server.address() as AddressInfo).port;
  const host = settings.SVC_HOST === '0.0.0.0' || settings.SVC_HOST === '::' ? '127.0.0.1' : settings.SVC_HOST;
  const metricsServer: MetricsServer | undefined =
    overrides.metricsOnEphemeralPort || settings.SVC_METRICS_PORT !== 0
      ? await startMetricsServer(registry, { host: settings.SVC_HOST, port: overrides.metricsOnEphemeralPort ? 0 : settings.SVC_METRICS_PORT })
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
        await metricsServer?.close();
        if (!overrides.store) await store.close();
        if (!overrides.database) await database.close();
      })()),
  };
}
