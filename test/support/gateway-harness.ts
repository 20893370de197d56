import { pino, type Logger } from 'pino';
import { buildCatalogue, parseSettings, type Catalogue, type Config } from '../../core/config/index.js';
import { createTestDatabase } from '../../core/db/testing.js';
import type { Database } from '../../core/db/index.js';
import { generateSecret, KeyRepository, type NewKey } from '../../core/keys/index.js';
import type { Store } from '../../core/store/index.js';
import type { Tracing } from '../../core/telemetry/index.js';
import { openSharedTestStores } from '../../core/store/testing.js';
import { startGateway, type RunningGateway } from '../../gateway/src/server.js';
import { startSimulator, type RunningSimulator, type SimulatorOptions } from '../simulator/server.js';

/** A supplier for the harness catalogue, served by its own simulator instance (or by `baseUrl`). */
export interface HarnessSupplier {
  name: string;
  region: string;
  /** Wire protocol (default openai); the simulator speaks all of them. */
  protocol?: 'openai' | 'anthropic' | 'openai-responses';
  /** Default: the supplier's position in the list, from 1 (so the first one is the primary). */
  priority?: number;
  weight?: number;
  /** Whole call (default 2000 ms in the harness). */
  timeout_ms?: number;
  connect_timeout_ms?: number;
  first_byte_timeout_ms?: number;
  /**
   * Base URL (with `/v1`) of a supplier the test serves itself; no simulator is started for it
   * and it is absent from `simulators`.
   */
  baseUrl?: string;
  /** A credential pool: names and the environment variables (harness settings) holding the keys. */
  credentials?: { name: string; api_key_env: string }[];
  models?: {
    id: string;
    upstream?: string;
    input_usd_per_mtok?: number;
    output_usd_per_mtok?: number;
    cached_input_usd_per_mtok?: number;
    cache_write_input_usd_per_mtok?: number;
    usd_per_audio_minute?: number;
    usd_per_mchar?: number;
    default_voice?: string;
    capabilities?: string[];
    max_output_tokens?: number;
    context_window?: number;
  }[];
  simulator?: SimulatorOptions;
}

/** Optional settings of the harness gateway. */
export interface HarnessOptions {
  /** Extra settings as environment variables (SVC_MAX_ATTEMPTS, SVC_CIRCUIT_*, SVC_SESSION_TTL_MS…). */
  settings?: Record<string, string>;
  /** The gateway's logger (default: silent). */
  logger?: Logger;
  /** Clock of every gateway of the harness (budget periods, circuit cooldowns), default Date.now. */
  clock?: () => number;
  /**
   * A migrated database the caller owns and closes (e.g. one shared by several harnesses of a
   * test file, since creating one per harness is the slow part); default: a fresh test database.
   */
  database?: Database;
  /**
   * A store the caller owns and closes (a portal harness's, so portal and gateway share key
   * announcements as in `npm start`); default: a fresh shared test store.
   */
  store?: Store;
  /** Tracing for the gateways of the harness (a test's in-memory exporter); default off. */
  tracing?: Tracing;
  /** Serve each gateway's /metrics on an ephemeral port (`gateway.metricsUrl`); default off. */
  metrics?: boolean;
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
  /** Creates a key through the repository; its id (for the Management API) and secret. */
  createKeyWithId(input?: Partial<NewKey>): Promise<{ id: string; secret: string }>;
  /** The key's audit records, newest first, as the Management API lists them (written asynchronously: poll). */
  auditOf(keyId: string): Promise<HarnessAuditRecord[]>;
  /**
   * Starts another gateway replica with the same config over the same database and store
   * contents: with REDIS_URL a separate RedisStore object on the same key prefix (as two pods
   * would have), otherwise the same MemoryStore object. close() stops it.
   */
  startReplica(options?: { logger?: Logger }): Promise<RunningGateway>;
  close(): Promise<void>;
}

/** An audit record as `GET /v1/manage/keys/{id}/audit` returns it (the fields tests read). */
export interface HarnessAuditRecord {
  request_id: string;
  /** The model the client named. */
  model: string;
  supplier: string | null;
  status: number;
  code: string | null;
  input_tokens: number;
  output_tokens: number;
  cached_input_tokens: number;
  cache_write_input_tokens: number;
  cost_usd: number;
  failover: boolean;
  attempts: {
    supplier: string;
    outcome: 'ok' | 'failed';
    status: number;
    code?: string;
    latency_ms: number;
    started_at: number;
    selection_ms?: number;
    credential?: string;
  }[];
}

const defaultSuppliers: HarnessSupplier[] = [{ name: 'sim-eu', region: 'EU' }];

/** The catalogue document (the YAML file's shape) of these suppliers; models default to gpt-4o-mini at 0.15/0.6 USD per Mtok. */
export function harnessCatalogueDocument(suppliers: HarnessSupplier[], baseUrl: (supplier: HarnessSupplier) => string) {
  return {
    suppliers: suppliers.map((s, i) => ({
      name: s.name,
      protocol: s.protocol ?? 'openai',
      base_url: baseUrl(s),
      region: s.region,
      priority: s.priority ?? i + 1,
      timeout_ms: s.timeout_ms ?? 2_000,
      ...(s.weight !== undefined && { weight: s.weight }),
      ...(s.connect_timeout_ms !== undefined && { connect_timeout_ms: s.connect_timeout_ms }),
      ...(s.first_byte_timeout_ms !== undefined && { first_byte_timeout_ms: s.first_byte_timeout_ms }),
      ...(s.credentials && { credentials: s.credentials }),
      models: (s.models ?? [{ id: 'gpt-4o-mini' }]).map((m) => ({
        input_usd_per_mtok: 0.15,
        output_usd_per_mtok: 0.6,
        owned_by: 'ext',
        ...m,
      })),
    })),
  };
}

/** The catalogue of these suppliers; `env` holds the variables their credentials name. */
export function harnessCatalogue(
  suppliers: HarnessSupplier[],
  baseUrl: (supplier: HarnessSupplier) => string,
  env: Record<string, string> = {},
): Catalogue {
  return buildCatalogue(harnessCatalogueDocument(suppliers, baseUrl), env);
}

/** Starts simulators, a gateway on an ephemeral port over a test database and store. */
export async function startGatewayHarness(
  suppliers: HarnessSupplier[] = defaultSuppliers,
  options: HarnessOptions = {},
): Promise<GatewayHarness> {
  const simulators = new Map<string, RunningSimulator>();
  for (const s of suppliers) {
    if (s.baseUrl === undefined) simulators.set(s.name, await startSimulator({ name: s.name, ...s.simulator }));
  }
  const catalogueDocument = harnessCatalogueDocument(suppliers, (s) => s.baseUrl ?? `${simulators.get(s.name)!.url}/v1`);
  // The settings are the gateway's environment: credential variables are read from them too.
  const catalogue = buildCatalogue(catalogueDocument, options.settings ?? {});
  const adminKey = generateSecret('admin');
  const pepper = generateSecret('admin');
  const settings = parseSettings({
    SVC_ADMIN_KEY: adminKey,
    SVC_KEY_PEPPER: pepper,
    SVC_CATALOG: '(in memory)',
    // The harness's catalogue is the one given here; suites that test the database catalogue ask for it.
    SVC_CATALOG_SOURCE: 'file',
    SVC_HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'silent',
    SVC_SHUTDOWN_GRACE_MS: '2000',
    // Off unless asked for: the default port would collide between concurrent test files.
    SVC_METRICS_PORT: '0',
    // A database the caller shares between harnesses (one per file, to save migrating one each):
    // each harness has a store prefix of its own, deleted when it closes, so each start moves the
    // database to its prefix deliberately, as a redeploy onto a new prefix would
    // (core/store/binding.ts). Harnesses open at once on it are the caller's to keep apart.
    ...(options.database && !options.store && { SVC_STORE_REBIND: 'true' }),
    ...options.settings,
  });
  const config: Config = { settings, catalogue, catalogueDocument };
  const database = options.database ?? (await createTestDatabase());
  const stores = openSharedTestStores();
  const store = options.store ?? stores.main;
  const silent = () => pino({ level: 'silent' });
  const clock = options.clock ?? Date.now;
  const telemetry = { ...(options.tracing && { tracing: options.tracing }), metricsOnEphemeralPort: options.metrics ?? false };
  const gateway = await startGateway(config, {
    database,
    store,
    logger: options.logger ?? silent(),
    clock,
    auditConsumer: 'harness-main',
    ...telemetry,
  });
  const repository = new KeyRepository(database.knex, pepper);
  const replicas: { gateway: RunningGateway; store: Store }[] = [];
  return {
    gateway,
    simulators,
    database,
    store,
    adminKey,
    pepper,
    config,
    createKey: async (input = {}) => (await repository.create({ kind: 'managed', name: 'test', source: 'api', ...input })).secret,
    createKeyWithId: async (input = {}) => {
      const { record, secret } = await repository.create({ kind: 'managed', name: 'test', source: 'api', ...input });
      return { id: record.id, secret };
    },
    auditOf: async (keyId) => {
      const res = await fetch(`${gateway.url}/v1/manage/keys/${keyId}/audit?limit=100`, {
        headers: { authorization: `Bearer ${adminKey}` },
      });
      if (res.status !== 200) throw new Error(`audit of ${keyId} answered ${res.status}: ${await res.text()}`);
      return ((await res.json()) as { data: HarnessAuditRecord[] }).data;
    },
    startReplica: async (replicaOptions = {}) => {
      // A store given by the caller (a portal's) is shared as it is: another connection of the
      // harness's own would not reach the caller's store.
      const replicaStore = options.store ?? stores.another();
      const replica = await startGateway(config, {
        database,
        store: replicaStore,
        logger: replicaOptions.logger ?? silent(),
        clock,
        auditConsumer: `harness-replica-${replicas.length + 1}`,
        ...telemetry,
      });
      replicas.push({ gateway: replica, store: replicaStore });
      return replica;
    },
    close: async () => {
      await Promise.all(replicas.map((r) => r.gateway.stop()));
      await gateway.stop();
      await Promise.all(replicas.filter((r) => r.store !== store).map((r) => r.store.close()));
      await Promise.all([...simulators.values()].map((s) => s.close()));
      await stores.main.close();
      if (!options.database) await database.close();
    },
  };
}
