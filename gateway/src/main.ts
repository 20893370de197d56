// Entry point of the gateway deployable: configuration from the environment and the
// catalogue only (how Kubernetes and the benchmarks run it). Wiring lives in server.ts.
import { ConfigError, loadConfig, stopOnSignals } from '../../core/config/index.js';
import { startTracing } from '../../core/telemetry/index.js';
import { startGateway } from './server.js';

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  // One OpenTelemetry SDK per process, configured by the standard OTEL_* variables.
  const tracing = startTracing({ serviceName: 'svc-gateway' });
  const gateway = await startGateway(config, { tracing });
  console.log(
    `gateway listening on ${gateway.url}; metrics: ${gateway.metricsUrl ?? 'off'}; audit writer: ${gateway.auditWriter}; tracing: ${tracing.decision.reason}`,
  );
  stopOnSignals(async () => {
    await gateway.stop();
    await tracing.shutdown();
  }, 'draining in-flight requests');
}

main().catch((error: unknown) => {
  console.error(error instanceof ConfigError ? `configuration error: ${error.message}` : error);
  process.exit(1);
});
