// `npm start`: the whole platform on embedded defaults, for a first look on a fresh machine.
// Starts the supplier simulator and the gateway (portal and operator join later), creates a
// demo key once, and prints how to call it. Data lives under SVC_DATA_DIR (default ./.data).
import { resolve } from 'node:path';
import { ConfigError, loadConfig, stopOnSignals } from '../../core/config/index.js';
import { DataDirLockedError, databaseTargetFromSettings, lockDataDir, openDatabase } from '../../core/db/index.js';
import { hashSecret, KeyRepository } from '../../core/keys/index.js';
import { startTracing } from '../../core/telemetry/index.js';
import { startGateway } from '../../gateway/src/server.js';
import { startSimulator } from '../../test/simulator/server.js';
import { banner } from './banner.js';
import { loadLocalCredentials, saveLocalCredentials } from './credentials.js';
import { writeDemoCatalogue } from './demo-catalogue.js';

async function main(): Promise<void> {
  const dataDir = resolve(process.env.SVC_DATA_DIR ?? './.data');
  // First, before any port or file is touched: one `npm start` per data directory.
  lockDataDir(dataDir);
  const credentials = loadLocalCredentials(dataDir);

  const simPort = Number(process.env.SIM_PORT ?? 8090);
  const simulator = await startSimulator({ port: simPort, name: 'demo-simulator' }).catch((error: unknown) => {
    throw new Error(`cannot start the supplier simulator on port ${simPort} (set SIM_PORT to a free port): ${String(error)}`);
  });
  const env = {
    SVC_HOST: '127.0.0.1',
    SVC_ADMIN_KEY: credentials.adminKey,
    SVC_KEY_PEPPER: credentials.pepper,
    ...process.env,
    // The demo catalogue points at the simulator just started, unless the caller brings its own.
    SVC_CATALOG: process.env.SVC_CATALOG ?? writeDemoCatalogue(dataDir, simulator.url),
    SVC_DATA_DIR: dataDir,
  };
  const config = loadConfig(env);
  // One OpenTelemetry SDK per process, configured by the standard OTEL_* variables (as gateway/src/main.ts).
  const tracing = startTracing({ serviceName: 'svc-gateway' });

  const database = await openDatabase(databaseTargetFromSettings(config.settings));
  await database.migrate();
  const keys = new KeyRepository(database.knex, config.settings.SVC_KEY_PEPPER);
  const existing = credentials.demoKey ? await keys.findByHash(hashSecret(credentials.demoKey, config.settings.SVC_KEY_PEPPER)) : undefined;
  let demoKey = credentials.demoKey;
  if (!existing || !demoKey) {
    demoKey = (await keys.create({ kind: 'managed', name: 'demo', source: 'bootstrap' })).secret;
    saveLocalCredentials(dataDir, { ...credentials, demoKey });
  }

  const gateway = await startGateway(config, { database, tracing });
  console.log(
    banner({
      database: config.settings.DATABASE_URL ? 'PostgreSQL from DATABASE_URL' : 'embedded PostgreSQL (PGlite)',
      store: config.settings.REDIS_URL ? 'Redis from REDIS_URL' : 'in-process store',
      gatewayUrl: gateway.url,
      metricsUrl: gateway.metricsUrl,
      tracing: tracing.decision.reason,
      simulatorUrl: simulator.url,
      catalogue: config.settings.SVC_CATALOG,
      dataDir,
      adminKey: config.settings.SVC_ADMIN_KEY,
      demoKey,
    }),
  );

  stopOnSignals(async () => {
    await gateway.stop();
    await database.close();
    await simulator.close();
    await tracing.shutdown();
  }, 'stopping the gateway and the simulator');
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) console.error(`configuration error: ${error.message}`);
  else if (error instanceof DataDirLockedError) console.error(`npm start: ${error.message}`);
  else console.error(error);
  process.exit(1);
});
