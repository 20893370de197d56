// Entry point of the separate audit writer (`npm run audit-writer`, the chart's
// gateway.auditWriter.separate Deployment): writes the shared audit stream to PostgreSQL for
// gateways that run with SVC_AUDIT_WRITER=off, so their processes only append. Needs the shared
// Redis and PostgreSQL; serves the audit gauges and /health on SVC_METRICS_PORT.
import { hostname } from 'node:os';
import { ConfigError, parseSettings, sharedServices, stopOnSignals } from '../../core/config/index.js';
import { databaseTargetFromSettings, openDatabase } from '../../core/db/index.js';
import {
  createLogger,
  createMetricsRegistry,
  createPlatformMetrics,
  registerAuditGauges,
  startMetricsServer,
} from '../../core/telemetry/index.js';
import { openOwnAuditWriter } from './audit/open-writer.js';
import { settledWithin } from '../../core/time/index.js';

async function main(): Promise<void> {
  const settings = parseSettings(process.env);
  if (!sharedServices(settings))
    throw new ConfigError('the audit writer needs REDIS_URL and DATABASE_URL: it writes the stream the gateways share');
  const logger = createLogger({ service: 'audit-writer', level: settings.LOG_LEVEL });
  // The schema may be newer than any gateway that ran yet (migrations take a lock: one runs them).
  const migrator = await openDatabase(databaseTargetFromSettings({ ...settings, SVC_DB_POOL_MAX: 1 }));
  await migrator.migrate();
  await migrator.close();
  const own = await openOwnAuditWriter(settings, { consumer: `${hostname()}-${process.pid}`, logger });
  const registry = createMetricsRegistry();
  createPlatformMetrics(registry);
  registerAuditGauges(registry, { auditBufferDepth: () => own.writer.backlog(), auditLagSeconds: () => own.writer.lagSeconds() });
  let stopping = false;
  const metrics =
    settings.SVC_METRICS_PORT !== 0
      ? await startMetricsServer(registry, { host: settings.SVC_HOST, port: settings.SVC_METRICS_PORT, health: () => !stopping })
      : undefined;
  stopOnSignals(
    async () => {
      stopping = true;
      // What is appended before the signal is written; bounded, so an outage cannot block the stop.
      await settledWithin(own.writer.flush(), 5_000);
      await own.close();
      await metrics?.close();
      await new Promise<void>((resolve) => logger.flush(() => resolve()));
    },
    'writing what was appended, then stopping',
    { ready: `audit writer running; metrics and /health: ${metrics?.url ?? 'off'}` },
  );
}

main().catch((error: unknown) => {
  console.error(error instanceof ConfigError ? `configuration error: ${error.message}` : error);
  process.exit(1);
});
