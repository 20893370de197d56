// Entry point of the portal deployable: configured by the environment only (docs/portal.md).
import { parsePortalSettings, startFailure, stopOnSignals, type ListenPorts } from '../../core/config/index.js';
import { startTracing } from '../../core/telemetry/index.js';
import { startPortal } from './server.js';

/** The ports this process listens on, once its settings are read (a taken one is named in the failure). */
let ports: ListenPorts = [];

async function main(): Promise<void> {
  const settings = parsePortalSettings(process.env);
  ports = [
    ['PORTAL_PORT', settings.PORTAL_PORT],
    ['SVC_METRICS_PORT', settings.SVC_METRICS_PORT],
  ];
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
  console.error(startFailure(error, 'portal', ports));
  process.exit(1);
});
