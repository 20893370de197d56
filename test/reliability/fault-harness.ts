import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { buildCatalogue, parseSettings, type Config } from '../../core/config/index.js';
import type { Database } from '../../core/db/index.js';
import { createTestDatabase } from '../../core/db/testing.js';
import { generateSecret } from '../../core/keys/index.js';
import { startGateway, type RunningGateway } from '../../gateway/src/server.js';
import { startSimulator, type RunningSimulator } from '../simulator/server.js';
import { openOutageStore, type OutageStore } from '../support/store-outage.js';

/** A gateway over a store the test can cut, empty and restore, with one simulated supplier. */
export interface FaultBed {
  gateway: RunningGateway;
  outage: OutageStore;
  database: Database;
  simulator: RunningSimulator;
  adminKey: string;
  /** Where the gateways spill audit records. */
  dataDir: string;
  /** Another gateway over the same database and store data (a second replica). */
  startReplica(): Promise<RunningGateway>;
  /** Stops the gateways (so their journals write what they hold), keeps the database for assertions. */
  stopGateways(): Promise<void>;
  close(): Promise<void>;
}

/** Supplier prices of the bed: every request costs the same to the nano-dollar given equal usage. */
export const bedPrices = { input_usd_per_mtok: 0.15, output_usd_per_mtok: 0.6 };

export async function startFaultBed(
  options: { settings?: Record<string, string>; database?: Database; storeTimeoutMs?: number } = {},
): Promise<FaultBed> {
  const simulator = await startSimulator({ name: 'sim-eu' });
  const catalogue = buildCatalogue(
    {
      suppliers: [
        {
          name: 'sim-eu',
          protocol: 'openai',
          base_url: `${simulator.url}/v1`,
          region: 'EU',
          priority: 1,
          timeout_ms: 5_000,
          models: [{ id: 'gpt-4o-mini', owned_by: 'ext', max_output_tokens: 64, ...bedPrices }],
        },
      ],
    },
    {},
  );
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-fault-'));
  const adminKey = generateSecret('admin');
  const settings = parseSettings({
    SVC_ADMIN_KEY: adminKey,
    SVC_KEY_PEPPER: generateSecret('admin'),
    SVC_CATALOG: '(in memory)',
    SVC_HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'silent',
    SVC_SHUTDOWN_GRACE_MS: '2000',
    SVC_METRICS_PORT: '0',
    SVC_DATA_DIR: dataDir,
    ...options.settings,
  });
  const config: Config = { settings, catalogue };
  const database = options.database ?? (await createTestDatabase());
  const outage = await openOutageStore(process.env, { timeoutMs: options.storeTimeoutMs });
  const logger = pino({ level: 'silent' });
  const gateway = await startGateway(config, { database, store: outage.store, logger, auditConsumer: 'fault-main' });
  const replicas: RunningGateway[] = [];
  let stopped: Promise<void> | undefined;
  const stopGateways = () => (stopped ??= Promise.all([gateway, ...replicas].map((g) => g.stop())).then(() => undefined));
  return {
    gateway,
    outage,
    database,
    simulator,
    adminKey,
    dataDir,
    startReplica: async () => {
      const replica = await startGateway(config, {
        database,
        store: outage.another(),
        logger,
        auditConsumer: `fault-replica-${replicas.length + 1}`,
      });
      replicas.push(replica);
      return replica;
    },
    stopGateways,
    close: async () => {
      outage.heal?.();
      await outage.restore();
      await stopGateways();
      await outage.close();
      await simulator.close();
      if (!options.database) await database.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** A JSON call; the answer's status and parsed body. */
export async function call(
  base: string,
  path: string,
  key: string,
  body?: unknown,
  method = body === undefined ? 'GET' : 'POST',
): Promise<{ status: number; body: any }> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

/** One small chat completion. */
export function chat(base: string, key: string): Promise<{ status: number; body: any }> {
  return call(base, '/v1/chat/completions', key, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }], max_tokens: 16 });
}

/** What a fault test reads of a chat answer: status, error code and the headers that matter. */
export interface ChatAnswer {
  status: number;
  code: string | undefined;
  requestId: string;
  retryAfter: string | null;
}

/**
 * One small chat completion that must be answered within `hungAfterMs`: a request still open
 * then fails the test as hung (during a fault, a hang is the failure being tested for).
 */
export async function chatAnswer(base: string, key: string, hungAfterMs = 10_000): Promise<ChatAnswer> {
  const response = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }], max_tokens: 16 }),
    signal: AbortSignal.timeout(hungAfterMs),
  }).catch((error: unknown) => {
    throw new Error(`the gateway did not answer within ${hungAfterMs} ms`, { cause: error });
  });
  const body = (await response.json()) as { error?: { code?: string } };
  return {
    status: response.status,
    code: body.error?.code,
    requestId: response.headers.get('x-request-id') ?? '',
    retryAfter: response.headers.get('retry-after'),
  };
}
