// Entry point of the gateway deployable: configuration from the environment and the
// catalogue only (how Kubernetes and the benchmarks run it). Wiring lives in server.ts.
import { ConfigError, loadConfig } from '../../core/config/index.js';
import { startTracing } from '../../core/telemetry/index.js';
import { startGateway } from './server.js';

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  // One OpenTelemetry SDK per process, configured by the standard OTEL_* variables.
  const tracing = startTracing({ serviceName: 'svc-gateway' });
  const gateway = await startGateway(config, { tracing });
  console.log(`gateway listening on ${gateway.url}; metrics: ${gateway.metricsUrl ?? 'off'}; tracing: ${tracing.decision.reason}`);
  const shutdown = (signal: string) => {
    console.log(`${signal}: draining in-flight requests`);
    gateway
      .stop()
      .then(() => tracing.shutdown())
      .then(
        () => process.exit(0),
        (error: unknown) => {
          console.error('shutdown failed', error);
          process.exit(1);
        },
      );
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
}

main().catch((error: unknown) => {
  console.error(error instanceof ConfigError ? `configuration error: ${error.message}` : error);
  process.exit(1);
});
