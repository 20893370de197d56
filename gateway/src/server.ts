import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { ConfigError, sharedServices, type Catalogue, type Config } from '../../core/config/index.js';
import { LiveCatalogue } from '../../core/catalogue/index.js';
import { databaseTargetFromSettings, openDatabase, type Database } from '../../core/db/index.js';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { auditBacklog, AuditBuffer, AuditJournal, AuditWriter, type AuditWriting } from '../../core/audit/index.js';
import { hashSecret, KeyRepository } from '../../core/keys/index.js';
import { sweepMirrorOutbox, WalletLedger } from '../../core/wallets/index.js';
import { bindAtStart, countStoreErrors, openStore, type Store } from '../../core/store/index.js';
import {
  createGatewayMetrics,
  createLogger,
  createMetricsRegistry,
  sqlStateClassLabel,
  startMetricsServer,
  tracingOff,
  type MetricsServer,
  type Tracing,
} from '../../core/telemetry/index.js';
import { createApp } from './app.js';
import { KeyDirectory } from './auth/key-directory.js';
import { SpendRecovery } from './enforcement/spend-recovery.js';
import { RegionPolicyRepository } from '../../core/regions/index.js';
import { RegionPolicyDirectory } from './routing/region-policy-directory.js';
import { UpstreamClient } from './http/upstream-client.js';
import { SessionAffinity } from './routing/session-affinity.js';
import { SupplierHealth } from './routing/supplier-health.js';
import { CredentialPool } from './routing/credential-pool.js';
import { CredentialEventWriter } from '../../core/routing/index.js';
import { AuditWriterThread } from './audit/writer-thread.js';
import { settledWithin } from '../../core/time/index.js';
import { ApiError } from '../../core/errors/index.js';
import type { RequestCancellation } from './http/cancellation.js';

/** How long stopping waits for the store or the database to close before giving up on it. */
const closeBoundMs = 5_000;

/** Resolves once `done()` holds (looked at every 20 ms) or `withinMs` passed, whichever is first. */
async function waitUntil(done: () => boolean, withinMs: number): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!done() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
}

/** A listening gateway and how to stop it gracefully. */
export interface RunningGateway {
  url: string;
  port: number;
  /** Where Prometheus scrapes this gateway (its own port), unless metrics are off. */
  metricsUrl: string | undefined;
  /** Where this gateway's audit writer runs (SVC_AUDIT_WRITER, resolved). */
  auditWriter: 'inline' | 'thread' | 'off';
  /** The metrics it records (a cluster worker hands it to the primary's aggregated /metrics). */
  registry: Registry;
  /** Stops accepting, lets in-flight requests finish (up to the grace period), closes resources. */
  stop(): Promise<void>;
}

/** Optional pieces a caller (the local launcher, tests) already owns. */
export interface GatewayOverrides {
  database?: Database;
  store?: Store;
  logger?: Logger;
  /** Clock for budget periods and circuit cooldowns (tests move it); defaults to Date.now. */
  clock?: () => number;
  /** Consumer name of this instance's audit writer (default hostname-pid). */
  auditConsumer?: string;
  /**
   * Tracing started by the process entry point (main.ts) or a test; default off. Started
   * there rather than here because the OpenTelemetry SDK is one per process.
   */
  tracing?: Tracing;
  /** Serve /metrics on an ephemeral port whatever SVC_METRICS_PORT says (tests). */
  metricsOnEphemeralPort?: boolean;
}

/** Opens the database and store the config names, builds the app and listens. */
export async function startGateway(config: Config, overrides: GatewayOverrides = {}): Promise<RunningGateway> {
  const { settings } = config;
  // Asynchronous stdout: a synchronous write per request line cost more CPU than the rest of
  // logging together (bench/RESULTS.md); lines still go out as soon as the previous write ends.
  const logger =
    overrides.logger ?? createLogger({ service: 'gateway', level: settings.LOG_LEVEL, logPromptContent: settings.SVC_LOG_PROMPTS });
  const registry = createMetricsRegistry();
  const inFlight = { count: 0 };
  // The gauges read these at scrape time; everything they read exists before the first scrape.
  const metrics = createGatewayMetrics(registry, {
    circuits: () => catalogue.suppliers.map((s) => ({ supplier: s.name, region: s.region, open: health.isOpen(s.name) })),
    auditBufferDepth: () => (auditWriter ? auditWriter.backlog() : auditBacklog(store)),
    auditLagSeconds: () => auditWriter?.lagSeconds() ?? 0,
    requestsInFlight: () => inFlight.count,
  });
  const database = overrides.database ?? (await openDatabase(databaseTargetFromSettings(settings)));
  if (!overrides.database) await database.migrate();
  const countQueryError = (error: unknown) => metrics.databaseErrors.inc({ class: sqlStateClassLabel(error) });
  database.knex.on('query-error', countQueryError);
  const store = countStoreErrors(overrides.store ?? openStore(settings), (operation) => metrics.storeErrors.inc({ operation }));
  // Before anything reads or counts in the store: a prefix another installation uses is refused.
  await bindAtStart(database, store, {
    rebind: settings.SVC_STORE_REBIND,
    warn: (message) => logger.warn(message),
    owned: { store: !overrides.store, database: !overrides.database },
  });
  const keyRepository = new KeyRepository(database.knex, settings.SVC_KEY_PEPPER);
  const wallets = new WalletLedger(database.knex, store);
  // Credits the Management API made while the store did not answer reach the wallet mirror here
  // (the portal sweeps the same outbox), so a gateway-only install needs nothing else.
  const stopMirrorSweep = sweepMirrorOutbox(database.knex, store, 5_000, (error) =>
    logger.warn({ err: error }, 'wallet credits not applied to the store yet; retrying in 5 s'),
  );
  // The request path appends through the journal: it spills what the stream refuses and writes
  // to PostgreSQL directly what the stream lost (docs/reliability.md).
  const auditJournal = new AuditJournal(new AuditBuffer(store), database.knex, {
    spillDir: join(settings.SVC_DATA_DIR, 'audit-spill'),
    onBatch: WalletLedger.recordAuditDebits,
    logger,
  });
  await auditJournal.start();
  // Each gateway writes the shared audit stream to PostgreSQL (wallet debits in the same
  // transaction as their rows, so a retried batch can neither lose nor double-charge), off the
  // serving thread where it can be (docs/architecture.md "Audit").
  const auditConsumer = overrides.auditConsumer ?? `${hostname()}-${process.pid}`;
  const confirmWritten = (requestIds: Iterable<string>) => auditJournal.confirm(requestIds);
  const auditMode = auditWriterMode(settings, overrides);
  let auditWriter: AuditWriting | undefined;
  if (auditMode === 'thread') {
    auditWriter = await AuditWriterThread.start(settings, { consumer: auditConsumer, logger, onWritten: confirmWritten });
  } else if (auditMode === 'inline') {
    const writer = new AuditWriter(store, database.knex, {
      consumer: auditConsumer,
      logger,
      onBatch: WalletLedger.recordAuditDebits,
      onWritten: (records) => confirmWritten(records.map((r) => r.requestId)),
    });
    await writer.start();
    auditWriter = writer;
  }
  const spend = new SpendRecovery(database.knex, auditJournal, wallets, { logger: (facts, message) => logger.warn(facts, message) });
  // A key's change heard reaches its requests in flight here (enforcement/key-flights.ts).
  const keys = new KeyDirectory(store, keyRepository, {
    onChange: (secretHash) =>
      void spend.keyChanged(store, secretHash, () => keyRepository.findByHash(secretHash), overrides.clock ?? Date.now),
  });
  await keys.start();
  const health = new SupplierHealth(
    store,
    {
      failureThreshold: settings.SVC_CIRCUIT_FAILURES,
      windowMs: settings.SVC_CIRCUIT_WINDOW_MS,
      cooldownMs: settings.SVC_CIRCUIT_COOLDOWN_MS,
    },
    overrides.clock,
  );
  // The catalogue: the file as given, or (SVC_CATALOG_SOURCE=database) the stored one, seeded from
  // the file when empty and followed live (core/catalogue/live.ts).
  const liveCatalogue =
    settings.SVC_CATALOG_SOURCE === 'database'
      ? new LiveCatalogue(config.catalogue, { knex: database.knex, store, env: process.env, pepper: settings.SVC_KEY_PEPPER, logger })
      : undefined;
  await liveCatalogue?.start(config.catalogueDocument);
  const catalogue: Catalogue = liveCatalogue ?? { ...config.catalogue };
  await health.start();
  // State other replicas recorded in the store (open circuits, credentials cooling down): loaded
  // now, or — the store down at start-up, no reason not to serve — retried until it answers.
  const retries = new Set<NodeJS.Timeout>();
  const loadWhenReachable = async (what: string, load: () => Promise<void>): Promise<void> => {
    try {
      await load();
    } catch (error) {
      logger.warn({ err: error }, `${what} not loaded: the store is unavailable; retrying in 5 s`);
      const retry = setTimeout(() => {
        retries.delete(retry);
        void loadWhenReachable(what, load);
      }, 5_000).unref();
      retries.add(retry);
    }
  };
  await loadWhenReachable('open circuits', () => health.load(catalogue.suppliers.map((s) => s.name)));
  const credentialEvents = new CredentialEventWriter(database.knex, {
    onError: (err, pending) => logger.warn({ err, pending }, 'credential events not written yet; retrying'),
  });
  const credentials = new CredentialPool(
    store,
    (event) => credentialEvents.record(event),
    () => catalogue.suppliers,
    {
      policy: {
        rateLimitedCooldownMs: settings.SVC_CREDENTIAL_RATE_LIMITED_COOLDOWN_MS,
        authFailureCooldownMs: settings.SVC_CREDENTIAL_AUTH_FAILURE_COOLDOWN_MS,
      },
      replica: `${hostname()}-${process.pid}`,
      ...(overrides.clock && { now: overrides.clock }),
    },
  );
  await credentials.start();
  await loadWhenReachable('credential states', () => credentials.load(catalogue.suppliers));
  const regionPolicies = new RegionPolicyDirectory(store, new RegionPolicyRepository(database.knex), { refreshMs: 30_000, logger });
  await regionPolicies.start();
  catalogue.regionPolicies = regionPolicies;
  const upstream = new UpstreamClient(settings.SVC_SUPPLIER_ANSWER_MAX_BYTES);
  const routedInFlight = new Set<RequestCancellation>();
  const app = createApp({
    catalogue,
    store,
    keys,
    keyRepository,
    database: database.knex,
    wallets,
    spend,
    audit: auditJournal,
    clock: overrides.clock ?? Date.now,
    upstream,
    health,
    credentials,
    sessions: new SessionAffinity(store, settings.SVC_SESSION_TTL_MS),
    maxAttempts: settings.SVC_MAX_ATTEMPTS,
    logger,
    telemetry: { metrics, tracer: (overrides.tracing ?? tracingOff).tracer, logPromptContent: settings.SVC_LOG_PROMPTS, inFlight },
    pepper: settings.SVC_KEY_PEPPER,
    adminKeyHash: hashSecret(settings.SVC_ADMIN_KEY, settings.SVC_KEY_PEPPER),
    bodyLimitBytes: settings.SVC_BODY_LIMIT_BYTES,
    bodyTimeoutMs: settings.SVC_BODY_TIMEOUT_MS,
    headersTimeoutMs: settings.SVC_HEADERS_TIMEOUT_MS,
    uploadIdleMs: settings.SVC_UPLOAD_IDLE_TIMEOUT_MS,
    startedAt: Date.now(),
    inFlight: routedInFlight,
  });
  await app.listen({ host: settings.SVC_HOST, port: settings.PORT });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : settings.PORT;
  const host = settings.SVC_HOST === '0.0.0.0' || settings.SVC_HOST === '::' ? '127.0.0.1' : settings.SVC_HOST;
  // Its own port, so the ingress in front of the API port never exposes metrics.
  const metricsPort = overrides.metricsOnEphemeralPort ? 0 : settings.SVC_METRICS_PORT;
  const metricsServer: MetricsServer | undefined =
    overrides.metricsOnEphemeralPort || settings.SVC_METRICS_PORT !== 0
      ? await startMetricsServer(registry, { host: settings.SVC_HOST, port: metricsPort, health: livenessOnMetricsPort })
      : undefined;

  /** Closes a resource, giving up (logged) after closeBoundMs. */
  const closeWithin = async (what: string, close: () => Promise<void>) => {
    const outcome = await settledWithin(close(), closeBoundMs);
    if (outcome === 'timed out')
      logger.warn({ resource: what, after_ms: closeBoundMs }, 'shutdown: gave up closing a resource that does not answer');
    else if (outcome === 'rejected') logger.warn({ resource: what }, 'shutdown: closing a resource failed');
  };

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      // app.close() stops the listener and waits for open connections. A keep-alive connection
      // whose request finishes during the drain would otherwise idle until its timeout, so idle
      // sockets are swept every 100 ms; the grace timer bounds the wait for hung streams.
      const sweep = setInterval(() => app.server.closeIdleConnections(), 100);
      const grace = setTimeout(() => {
        // Answers still under way when the grace ends (a long stream) end with their family's
        // error event — the client is told to retry — rather than a connection cut without a word.
        // The connections still open are closed once those answers have ended (their charge may
        // take a token count: a fixed second cut them mid-end in CI), or after a bound.
        const ended = new ApiError('service_unavailable', {
          humanMessage: 'The gateway is shutting down and its grace period for answers in flight ended; retry the request',
        });
        for (const request of routedInFlight) request.abort(ended);
        void waitUntil(() => routedInFlight.size === 0, closeBoundMs).then(() => app.server.closeAllConnections());
      }, settings.SVC_SHUTDOWN_GRACE_MS);
      try {
        await app.close();
        // A request whose connection closed may still be settling and appending its audit record
        // (one ended by the grace above, released from waiting on its client): the writer is
        // stopped only after they have, or after a bound.
        await waitUntil(() => routedInFlight.size === 0, closeBoundMs);
      } finally {
        clearInterval(sweep);
        clearTimeout(grace);
      }
      for (const retry of retries) clearTimeout(retry);
      await keys.stop();
      await regionPolicies.stop();
      await health.stop();
      await credentials.stop();
      await settledWithin(credentialEvents.close(), 2_000);
      await settledWithin(stopMirrorSweep(), 2_000);
      await liveCatalogue?.stop();
      // Everything answered is in the durable buffer already; flushing just saves the next
      // instance the work (and is bounded, so a database outage cannot block shutdown).
      if (auditWriter) {
        // A writer that cannot flush (its thread restarting, say) must not cut the rest of the stop short.
        await settledWithin(auditWriter.flush(), 5_000);
        await auditWriter.stop();
      }
      // What the journal still watches is in the stream or its spill file: the next process (or
      // another replica's writer) writes it.
      await spend.stop();
      await auditJournal.stop();
      await upstream.close();
      database.knex.off('query-error', countQueryError);
      // A store or database that never answers (frozen) must not hold the process: closing gives up after a while.
      if (!overrides.store) await closeWithin('store', () => store.close());
      if (!overrides.database) await closeWithin('database', () => database.close());
      // Liveness stays 200 on the metrics port until the end (docs/deploy.md).
      await metricsServer?.close();
      await new Promise<void>((resolveFlush) => logger.flush(() => resolveFlush()));
    })();
    return stopping;
  };
  return { url: `http://${host}:${port}`, port, metricsUrl: metricsServer?.url, auditWriter: auditMode, registry, stop };
}

/**
 * Where this gateway's audit writer runs. `auto`: in a thread when the store and the database
 * are the shared Redis and PostgreSQL named by the settings (a thread opens its own connections to
 * them); in the serving thread on the embedded defaults, or when the caller handed in its own
 * store or database (tests, the local launcher), which a thread cannot reach.
 */
export function auditWriterMode(
  settings: Config['settings'],
  overrides: Pick<GatewayOverrides, 'store' | 'database'> = {},
): 'inline' | 'thread' | 'off' {
  const urls = sharedServices(settings);
  // A thread opens its own connections: to an in-process store it would read an empty stream of
  // its own, and a second embedded database on the same data directory is not allowed.
  if (settings.SVC_AUDIT_WRITER === 'thread' && !urls)
    throw new ConfigError(
      'SVC_AUDIT_WRITER=thread needs REDIS_URL and DATABASE_URL: a writer thread cannot share the embedded database and in-process store',
    );
  if (settings.SVC_AUDIT_WRITER !== 'auto') return settings.SVC_AUDIT_WRITER;
  return urls && !overrides.store && !overrides.database ? 'thread' : 'inline';
}

/**
 * Liveness (charts/: the gateway's livenessProbe): the metrics port answers /health 200 for as
 * long as the process serves at all, including the whole drain, while the API port's /health
 * (readiness) answers 503 and then closes. So a pod finishing long streams is taken out of the
 * Service but never restarted.
 */
function livenessOnMetricsPort(): boolean {
  return true;
}
