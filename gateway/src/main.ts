// Entry point of the gateway deployable: configuration from the environment and the
// catalogue only (how Kubernetes and the benchmarks run it). Wiring lives in server.ts.
import { ConfigError, loadConfig } from '../../core/config/index.js';
import { startGateway } from './server.js';

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const gateway = await startGateway(config);
  console.log(`gateway listening on ${gateway.url}`);
  const shutdown = (signal: string) => {
    console.log(`${signal}: draining in-flight requests`);
    gateway.stop().then(
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
