// Entry point of the portal deployable: configured by the environment only (docs/portal.md).
import { ConfigError, parsePortalSettings, stopOnSignals } from '../../core/config/index.js';
import { startTracing } from '../../core/telemetry/index.js';
import { startPortal } from './server.js';

async function main(): Promise<void> {
  const settings = parsePortalSettings(process.env);
  // One OpenTelemetry SDK per process, configured by the standard OTEL_* variables.
  const tracing = startTracing({ serviceName: 'svc-portal' });
  const portal = await startPortal(settings, { tracing });
  stopOnSignals(
    async () => {
      await portal.stop();
      await tracing.shutdown();
    },
    'closing the portal',
    {
      deadlineMs: settings.SVC_SHUTDOWN_GRACE_MS + 30_000,
      ready: `portal listening on ${portal.url} (public address ${portal.deps.settings.SVC_PORTAL_BASE_URL}); metrics: ${portal.metricsUrl ?? 'off'}; tracing: ${tracing.decision.reason}`,
    },
  );
}

main().catch((error: unknown) => {
  console.error(error instanceof ConfigError ? `configuration error: ${error.message}` : error);
  process.exit(1);
});
