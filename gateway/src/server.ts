import { pino, type Logger } from 'pino';
import type { Config } from '../../core/config/index.js';
import { databaseTargetFromSettings, openDatabase, type Database } from '../../core/db/index.js';
import { hashSecret, KeyRepository } from '../../core/keys/index.js';
import { openStore, type Store } from '../../core/store/index.js';
import { createApp } from './app.js';
import { KeyDirectory } from './auth/key-directory.js';
import { UpstreamClient } from './http/upstream-client.js';
import { SessionAffinity } from './routing/session-affinity.js';
import { SupplierHealth } from './routing/supplier-health.js';

/** A listening gateway and how to stop it gracefully. */
export interface RunningGateway {
  url: string;
  port: number;
  /** Stops accepting, lets in-flight requests finish (up to the grace period), closes resources. */
  stop(): Promise<void>;
}

/** Optional pieces a caller (the local launcher, tests) already owns. */
export interface GatewayOverrides {
  database?: Database;
  store?: Store;
  logger?: Logger;
}

/** Opens the database and store the config names, builds the app and listens. */
export async function startGateway(config: Config, overrides: GatewayOverrides = {}): Promise<RunningGateway> {
  const { settings } = config;
  // Asynchronous stdout: a synchronous write per request line cost more CPU than the rest of
  // logging together (bench/RESULTS.md); lines still go out as soon as the previous write ends.
  const logger = overrides.logger ?? pino({ level: settings.LOG_LEVEL, base: { service: 'gateway' } }, pino.destination({ dest: 1, sync: false }));
  const database = overrides.database ?? (await openDatabase(databaseTargetFromSettings(settings)));
  if (!overrides.database) await database.migrate();
  const store = overrides.store ?? openStore(settings);
  const keys = new KeyDirectory(store, new KeyRepository(database.knex, settings.SVC_KEY_PEPPER));
  await keys.start();
  const health = new SupplierHealth(store, {
    failureThreshold: settings.SVC_CIRCUIT_FAILURES,
    windowMs: settings.SVC_CIRCUIT_WINDOW_MS,
    cooldownMs: settings.SVC_CIRCUIT_COOLDOWN_MS,
  });
  await health.start();
  await health.load(config.catalogue.suppliers.map((s) => s.name));
  const upstream = new UpstreamClient();
  const app = createApp({
    catalogue: config.catalogue,
    store,
    keys,
    upstream,
    health,
    sessions: new SessionAffinity(store, settings.SVC_SESSION_TTL_MS),
    maxAttempts: settings.SVC_MAX_ATTEMPTS,
    logger,
    pepper: settings.SVC_KEY_PEPPER,
    adminKeyHash: hashSecret(settings.SVC_ADMIN_KEY, settings.SVC_KEY_PEPPER),
    bodyLimitBytes: settings.SVC_BODY_LIMIT_BYTES,
    startedAt: Date.now(),
  });
  await app.listen({ host: settings.SVC_HOST, port: settings.PORT });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : settings.PORT;
  const host = settings.SVC_HOST === '0.0.0.0' || settings.SVC_HOST === '::' ? '127.0.0.1' : settings.SVC_HOST;

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      // app.close() stops the listener and waits for open connections. A keep-alive connection
      // whose request finishes during the drain would otherwise idle until its timeout, so idle
      // sockets are swept every 100 ms; the grace timer bounds the wait for hung streams.
      const sweep = setInterval(() => app.server.closeIdleConnections(), 100);
      const grace = setTimeout(() => app.server.closeAllConnections(), settings.SVC_SHUTDOWN_GRACE_MS);
      try {
        await app.close();
      } finally {
        clearInterval(sweep);
        clearTimeout(grace);
      }
      await keys.stop();
      await health.stop();
      await upstream.close();
      if (!overrides.store) await store.close();
      if (!overrides.database) await database.close();
      await new Promise<void>((resolveFlush) => logger.flush(() => resolveFlush()));
    })();
    return stopping;
  };
  return { url: `http://${host}:${port}`, port, stop };
}
