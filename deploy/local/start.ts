// `npm start`: the whole platform on embedded defaults, for a first look on a fresh machine.
// Starts the supplier simulator and the gateway (portal and operator join later), creates a
// demo key once, and prints how to call it. Data lives under SVC_DATA_DIR (default ./.data).
import { resolve } from 'node:path';
import { ConfigError, loadConfig } from '../../core/config/index.js';
import { databaseTargetFromSettings, openDatabase } from '../../core/db/index.js';
import { hashSecret, KeyRepository } from '../../core/keys/index.js';
import { startGateway } from '../../gateway/src/server.js';
import { startSimulator } from '../../test/simulator/server.js';
import { loadLocalCredentials, saveLocalCredentials } from './credentials.js';

async function main(): Promise<void> {
  const dataDir = resolve(process.env.SVC_DATA_DIR ?? './.data');
  const credentials = loadLocalCredentials(dataDir);
  const env = {
    SVC_HOST: '127.0.0.1',
    SVC_CATALOG: resolve(import.meta.dirname, 'catalog.yaml'),
    SVC_ADMIN_KEY: credentials.adminKey,
    SVC_KEY_PEPPER: credentials.pepper,
    ...process.env,
    SVC_DATA_DIR: dataDir,
  };
  const config = loadConfig(env);
  const simPort = Number(process.env.SIM_PORT ?? 8090);
  const simulator = await startSimulator({ port: simPort, name: 'demo-simulator' }).catch((error: unknown) => {
    throw new Error(`cannot start the supplier simulator on port ${simPort} (set SIM_PORT and a matching SVC_CATALOG): ${String(error)}`);
  });

  const database = await openDatabase(databaseTargetFromSettings(config.settings));
  await database.migrate();
  const keys = new KeyRepository(database.knex, config.settings.SVC_KEY_PEPPER);
  const existing = credentials.demoKey ? await keys.findByHash(hashSecret(credentials.demoKey, config.settings.SVC_KEY_PEPPER)) : undefined;
  let demoKey = credentials.demoKey;
  if (!existing || !demoKey) {
    demoKey = (await keys.create({ kind: 'managed', name: 'demo', source: 'bootstrap' })).secret;
    saveLocalCredentials(dataDir, { ...credentials, demoKey });
  }

  const gateway = await startGateway(config, { database });
  const base = gateway.url;
  console.log(`
svc LLM gateway is running (embedded ${config.settings.DATABASE_URL ? 'PostgreSQL from DATABASE_URL' : 'PostgreSQL (PGlite)'}, ${config.settings.REDIS_URL ? 'Redis' : 'in-process store'})

  gateway     ${base}            (health: ${base}/health)
  simulator   ${simulator.url}   (stands in for real suppliers)
  data dir    ${dataDir}
  admin key   ${config.settings.SVC_ADMIN_KEY}
  demo key    ${demoKey}

Try it:

  curl -s ${base}/v1/chat/completions \\
    -H "Authorization: Bearer ${demoKey}" -H "Content-Type: application/json" \\
    -d '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hello!"}]}'

  // OpenAI SDK (npm i openai), node --input-type=module:
  import OpenAI from 'openai';
  const client = new OpenAI({ baseURL: '${base}/v1', apiKey: '${demoKey}' });
  const reply = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello!' }] });
  console.log(reply.choices[0].message.content);

Ctrl-C stops everything; data and keys survive a restart.
`);

  const shutdown = async () => {
    await gateway.stop();
    await database.close();
    await simulator.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void shutdown());
  process.once('SIGTERM', () => void shutdown());
}

main().catch((error: unknown) => {
  console.error(error instanceof ConfigError ? `configuration error: ${error.message}` : error);
  process.exit(1);
});
