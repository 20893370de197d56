// Entry point of the gateway deployable: configuration from the environment and the
// catalogue only (how Kubernetes and the benchmarks run it). Wiring lives in server.ts; with
// SVC_WORKERS > 1 this process supervises that many gateway processes (cluster.ts).
import { loadConfig, startFailure, stopOnSignals, type ListenPorts } from '../../core/config/index.js';
import { startTracing } from '../../core/telemetry/index.js';
import { isClusterWorker, reportMetricsToPrimary, runClusterPrimary, workerCount } from './cluster.js';
import { startGateway } from './server.js';
import { tokenCounter } from './tokens/count.js';

/** The ports this process listens on, once its settings are read (a taken one is named in the failure). */
let ports: ListenPorts = [];

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  ports = [
    ['PORT', config.settings.PORT],
    ['SVC_METRICS_PORT', config.settings.SVC_METRICS_PORT],
  ];
  const workers = workerCount(config.settings);
  if (workers > 1 && !isClusterWorker()) {
    const primary = await runClusterPrimary(config.settings, workers);
    stopOnSignals(
      async () => {
        if (!(await primary.stop())) throw new Error('a gateway worker did not drain cleanly');
      },
      `draining ${workers} gateway workers`,
      {
        // Past the workers' own deadline (below), so the primary never cuts a worker still draining.
        deadlineMs: config.settings.SVC_SHUTDOWN_GRACE_MS + 45_000,
        ready: `gateway listening on ${primary.url}; workers: ${primary.workers}; metrics: ${primary.metricsUrl ?? 'off'}`,
      },
    );
    return;
  }
  // One OpenTelemetry SDK per process, configured by the standard OTEL_* variables.
  const tracing = startTracing({ serviceName: 'svc-gateway' });
  const gateway = await startGateway(config, { tracing });
  // The token counter thread loads the tokenizer while the gateway starts serving, not on the first count.
  tokenCounter.warm();
  stopOnSignals(
    async () => {
      await gateway.stop();
      await tokenCounter.stop();
      await tracing.shutdown();
    },
    'draining in-flight requests',
    {
      // The drain's grace, then half a minute for the closes after it (each bounded in server.ts).
      deadlineMs: config.settings.SVC_SHUTDOWN_GRACE_MS + 30_000,
      // A worker reports to its primary instead, which says the gateway is listening.
      ...(!isClusterWorker() && {
        ready: `gateway listening on ${gateway.url}; metrics: ${gateway.metricsUrl ?? 'off'}; audit writer: ${gateway.auditWriter}; tracing: ${tracing.decision.reason}`,
      }),
    },
  );
  if (isClusterWorker()) reportMetricsToPrimary(gateway.registry);
}

main().catch((error: unknown) => {
  console.error(startFailure(error, 'gateway', ports));
  process.exit(1);
});
