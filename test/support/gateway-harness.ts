import { pino } from 'pino';
import { buildCatalogue, parseSettings, type Config } from '../../core/config/index.js';
import { createTestDatabase } from '../../core/db/testing.js';
import type { Database } from '../../core/db/index.js';
import { generateSecret, KeyRepository, type NewKey } from '../../core/keys/index.js';
import { createTestStore } from '../../core/store/testing.js';
import type { Store } from '../../core/store/index.js';
import { startGateway, type RunningGateway } from '../../gateway/src/server.js';
import { startSimulator, type RunningSimulator, type SimulatorOptions } from '../simulator/server.js';

/** A supplier for the harness catalogue, served by its own simulator instance. */
export interface HarnessSupplier {
  name: string;
  region: string;
  /** Wire protocol (default openai); the simulator speaks all of them. */
  protocol?: 'openai' | 'anthropic' | 'openai-responses';
  priority?: number;
  models?: {
    id: string;
    upstream?: string;
    input_usd_per_mtok?: number;
    output_usd_per_mtok?: number;
    capabilities?: string[];
    max_output_tokens?: number;
    context_window?: number;
  }[];
  simulator?: SimulatorOptions;
}

/** A running gateway wired to simulators, a fresh database and store, with an admin key. */
export interface GatewayHarness {
  gateway: RunningGateway;
  simulators: Map<string, RunningSimulator>;
  database: Database;
  store: Store;
  adminKey: string;
  pepper: string;
  config: Config;
  /** Creates a key through the repository and returns its secret. */
  createKey(input?: Partial<NewKey>): Promise<string>;
  close(): Promise<void>;
}

const defaultSuppliers: HarnessSupplier[] = [{ name: 'sim-eu', region: 'EU' }];

/** Starts simulators, a gateway on an ephemeral port over a test database and store. */
export async function startGatewayHarness(suppliers: HarnessSupplier[] = defaultSuppliers): Promise<GatewayHarness> {
  const simulators = new Map<string, RunningSimulator>();
  for (const s of suppliers) simulators.set(s.name, await startSimulator({ name: s.name, ...s.simulator }));
  const catalogue = buildCatalogue(
    {
      suppliers: suppliers.map((s, i) => ({
        name: s.name,
        protocol: s.protocol ?? 'openai',
        base_url: `${simulators.get(s.name)!.url}/v1`,
        region: s.region,
        priority: s.priority ?? i + 1,
        timeout_ms: 2_000,
        models: (s.models ?? [{ id: 'gpt-4o-mini' }]).map((m) => ({
          input_usd_per_mtok: 0.15,
          output_usd_per_mtok: 0.6,
          owned_by: 'ext',
          ...m,
        })),
      })),
    },
    {},
  );
  const adminKey = generateSecret('admin');
  const pepper = generateSecret('admin');
  const settings = parseSettings({
    SVC_ADMIN_KEY: adminKey,
    SVC_KEY_PEPPER: pepper,
    SVC_CATALOG: '(in memory)',
    SVC_HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'silent',
    SVC_SHUTDOWN_GRACE_MS: '2000',
  });
  const config: Config = { settings, catalogue };
  const database = await createTestDatabase();
  const store = createTestStore();
  const gateway = await startGateway(config, { database, store, logger: pino({ level: 'silent' }) });
  const repository = new KeyRepository(database.knex, pepper);
  return {
    gateway,
    simulators,
    database,
    store,
    adminKey,
    pepper,
    config,
    createKey: async (input = {}) => (await repository.create({ kind: 'managed', name: 'test', source: 'api', ...input })).secret,
    close: async () => {
      await gateway.stop();
      await Promise.all([...simulators.values()].map((s) => s.close()));
      await store.close();
      await database.close();
    },
  };
}
