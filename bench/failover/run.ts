// Failover benchmark (not a test). Run it with:
//
//   npx tsx bench/failover/run.ts
//
// (no npm script). Env: BENCH_FAILOVER_TRIALS (failover requests per scenario, default 2000),
// DATABASE_URL (a scratch database on that PostgreSQL server instead of embedded PGlite, whose
// WebAssembly runs on the benchmark's own thread) and REDIS_URL (Redis as the gateway's store
// instead of the in-process one).
//
// Measures how long the gateway takes to select the next supplier after the primary failed:
// the `selectionMs` it records per attempt (from the request log line's `attempts`, captured from
// an in-process pino logger), p50/p99 over many trials, for a primary failing fast with 503 and
// with 429, with the circuit breaker kept closed. Also measures the same gap from outside (the
// two suppliers timestamp the primary's failure response and the secondary's request on one
// clock), the client-visible extra latency of a failover request over a normal one, and — with
// the default circuit settings — how many requests still try the failing primary and how many
// skip it once its circuit is open. Prints the section and writes it into bench/RESULTS.md
// between `<!-- failover:start/end -->`, leaving the other sections alone.
import { randomBytes } from 'node:crypto';
import { cpus, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { Agent, request } from 'undici';
import { buildCatalogue, parseSettings, type Config } from '../../core/config/index.js';
import type { Database } from '../../core/db/index.js';
import { createTestDatabase } from '../../core/db/testing.js';
import { generateSecret, KeyRepository } from '../../core/keys/index.js';
import { MemoryStore, RedisStore, type Store } from '../../core/store/index.js';
import { startGateway, type RunningGateway } from '../../gateway/src/server.js';
import { writeSection } from '../streaming/results.js';
import { renderFailoverSection, type CircuitScenario, type TimedScenario } from './results.js';
import { startBenchSupplier, type SupplierMode } from './suppliers.js';

const root = resolve(import.meta.dirname, '../..');
const trials = Number(process.env.BENCH_FAILOVER_TRIALS ?? 2000);
const warmup = 500;
const model = 'gpt-4o-mini';
const circuitClosed = { SVC_CIRCUIT_FAILURES: '1000000000' };

/** One attempt as the request log line reports it (gateway/src/pipeline/attempts.ts). */
interface LoggedAttempt {
  supplier: string;
  outcome: 'ok' | 'failed';
  status: number;
  code?: string;
  selectionMs?: number;
}
interface RequestLine {
  request_id: string;
  status: number;
  attempts?: LoggedAttempt[];
}

/** A gateway over the shared database, its own store, and a request log captured in memory. */
interface BenchGateway {
  gateway: RunningGateway;
  lines: Map<string, RequestLine>;
  stop(): Promise<void>;
}

let counter = 0;

async function main(): Promise<void> {
  const database = await createTestDatabase(process.env);
  const pepper = generateSecret('admin');
  const { secret } = await new KeyRepository(database.knex, pepper).create({ kind: 'managed', name: 'bench-failover', source: 'api' });
  const primary = await startBenchSupplier('primary', { kind: 'ok' });
  const secondary = await startBenchSupplier('secondary', { kind: 'ok' });
  const agent = new Agent({ connections: 4, keepAliveTimeout: 30_000 });
  const redisPrefixes: string[] = [];

  const catalogue = buildCatalogue(
    {
      suppliers: [primary, secondary].map((s, i) => ({
        name: s.name,
        protocol: 'openai',
        base_url: s.url,
        region: 'EU',
        priority: i + 1,
        timeout_ms: 5_000,
        models: [{ id: model, input_usd_per_mtok: 0.15, output_usd_per_mtok: 0.6 }],
      })),
    },
    {},
  );

  type StoreKind = 'in-process' | 'Redis';
  const defaultStore: StoreKind = process.env.REDIS_URL ? 'Redis' : 'in-process';
  const openStore = (kind: StoreKind): Store => {
    const url = process.env.REDIS_URL;
    if (kind === 'in-process' || !url) return new MemoryStore('bench:');
    const prefix = `bench-failover:${randomBytes(6).toString('hex')}:`;
    redisPrefixes.push(prefix);
    return new RedisStore(url, prefix);
  };

  const startBenchGateway = async (settings: Record<string, string>, storeKind: StoreKind = defaultStore): Promise<BenchGateway> => {
    const lines = new Map<string, RequestLine>();
    const logger = pino(
      { level: 'info' },
      {
        write(text: string) {
          const line = JSON.parse(text) as RequestLine & { msg?: string };
          if (line.msg === 'request') lines.set(line.request_id, line);
        },
      },
    );
    const config: Config = {
      catalogue,
      settings: parseSettings({
        SVC_ADMIN_KEY: generateSecret('admin'),
        SVC_KEY_PEPPER: pepper,
        SVC_CATALOG: '(in memory)',
        SVC_HOST: '127.0.0.1',
        PORT: '0',
        LOG_LEVEL: 'info',
        SVC_SHUTDOWN_GRACE_MS: '1000',
        // Each gateway a fresh Redis prefix on the one database (no state carried between
        // measurements): moved there deliberately, as the database is bound to one prefix.
        SVC_STORE_REBIND: 'true',
        ...settings,
      }),
    };
    const store = openStore(storeKind);
    const gateway = await startGateway(config, { database: database as Database, store, logger });
    return {
      gateway,
      lines,
      stop: async () => {
        await gateway.stop();
        await store.close();
      },
    };
  };

  /** One chat completion through the gateway; a new first message each time (no session pin). */
  const send = async (
    gatewayUrl: string,
  ): Promise<{ id: string; status: number; supplier: string | undefined; failover: string | undefined; ms: number }> => {
    const body = JSON.stringify({
      model,
      max_tokens: 16,
      messages: [{ role: 'user', content: `Failover benchmark request ${++counter}` }],
    });
    const started = performance.now();
    const res = await request(`${gatewayUrl}/v1/chat/completions`, {
      method: 'POST',
      dispatcher: agent,
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body,
    });
    await res.body.arrayBuffer();
    const ms = performance.now() - started;
    const header = (name: string) => {
      const v = res.headers[name];
      return Array.isArray(v) ? v[0] : v;
    };
    return {
      id: header('x-request-id') ?? '',
      status: res.statusCode,
      supplier: header('x-svc-supplier'),
      failover: header('x-svc-failover'),
      ms,
    };
  };

  /**
   * The timed scenarios, interleaved request by request on one gateway with the circuit kept
   * closed (normal, 503, 429, normal, 503, 429, …), so JIT warm-up, GC and machine drift fall on
   * every scenario alike. Each request is checked: answered 200 by the expected supplier.
   */
  const timedScenarios = async (scenarios: { name: string; mode: SupplierMode }[], storeKind: StoreKind): Promise<TimedScenario[]> => {
    const bench = await startBenchGateway(circuitClosed, storeKind);
    const results = scenarios.map((s): TimedScenario => ({
      name: s.name,
      store: storeKind,
      trials,
      unexpected: 0,
      selectionMs: [],
      gapMs: [],
      clientMs: [],
    }));
    const sent: { scenario: number; id: string; ms: number }[] = [];
    try {
      for (let i = 0; i < warmup; i++) {
        for (const s of scenarios) {
          primary.mode = s.mode;
          await send(bench.gateway.url);
        }
      }
      primary.timings.clear();
      secondary.timings.clear();
      for (let i = 0; i < trials; i++) {
        for (const [index, s] of scenarios.entries()) {
          primary.mode = s.mode;
          const failover = s.mode.kind !== 'ok';
          const reply = await send(bench.gateway.url);
          const expected =
            reply.status === 200 && reply.supplier === (failover ? 'secondary' : 'primary') && reply.failover === String(failover);
          if (!expected) results[index]!.unexpected++;
          else sent.push({ scenario: index, id: reply.id, ms: reply.ms });
        }
      }
      await new Promise((r) => setImmediate(r)); // the last request line
    } finally {
      primary.mode = { kind: 'ok' };
      await bench.stop();
    }
    for (const { scenario, id, ms } of sent) {
      const result = results[scenario]!;
      result.clientMs.push(ms);
      if (scenarios[scenario]!.mode.kind === 'ok') continue;
      const attempt = bench.lines.get(id)?.attempts?.[1];
      if (attempt?.selectionMs === undefined) {
        result.unexpected++;
        continue;
      }
      result.selectionMs.push(attempt.selectionMs);
      const failedAt = primary.timings.get(id)?.finishedAt;
      const receivedAt = secondary.timings.get(id)?.receivedAt;
      if (failedAt !== undefined && receivedAt !== undefined) result.gapMs.push(receivedAt - failedAt);
    }
    return results;
  };

  /** Default circuit settings: which requests still try the failing primary. */
  const circuitScenario = async (
    name: string,
    mode: SupplierMode,
    plan: { requests: number } | { durationMs: number; markMs: number },
  ): Promise<CircuitScenario & { afterMark?: { tried: number; skipped: number } }> => {
    primary.mode = { kind: 'ok' };
    const bench = await startBenchGateway({});
    try {
      for (let i = 0; i < warmup; i++) await send(bench.gateway.url);
      primary.mode = mode;
      const ids: { id: string; at: number }[] = [];
      const started = performance.now();
      for (let i = 0; 'requests' in plan ? i < plan.requests : performance.now() - started < plan.durationMs; i++) {
        const reply = await send(bench.gateway.url);
        ids.push({ id: reply.id, at: performance.now() - started });
      }
      await new Promise((r) => setImmediate(r));
      let tried = 0;
      let firstSkipped: number | undefined;
      const afterMark = { tried: 0, skipped: 0 };
      ids.forEach(({ id, at }, i) => {
        const first = bench.lines.get(id)?.attempts?.[0]?.supplier;
        const triedPrimary = first === 'primary';
        if (triedPrimary) tried++;
        else firstSkipped ??= i + 1;
        if ('markMs' in plan && at > plan.markMs) {
          if (triedPrimary) afterMark.tried++;
          else afterMark.skipped++;
        }
      });
      const note =
        'markMs' in plan
          ? `${ids.length} requests over ${(plan.durationMs / 1000).toFixed(1)} s; from ${plan.markMs / 1000} s on (the 1 s Retry-After long over): ` +
            `primary tried ${afterMark.tried}, skipped ${afterMark.skipped}` +
            (afterMark.tried === 0
              ? ' — the circuit stays open for max(Retry-After, SVC_CIRCUIT_COOLDOWN_MS = 30 s), not for the Retry-After'
              : ' — tried again once each Retry-After elapsed; each new 429 cools it down again')
          : 'every skipped request was answered by the secondary without a failed attempt';
      return { name, requests: ids.length, primaryTried: tried, primarySkipped: ids.length - tried, firstSkipped, note, afterMark };
    } finally {
      await bench.stop();
      primary.mode = { kind: 'ok' };
    }
  };

  const timed: TimedScenario[] = [];
  const circuits: CircuitScenario[] = [];
  try {
    // With REDIS_URL the timed scenarios run on both stores: the failure count goes to the store on the failover path.
    for (const storeKind of defaultStore === 'Redis' ? (['in-process', 'Redis'] as const) : (['in-process'] as const)) {
      timed.push(
        ...(await timedScenarios(
          [
            { name: 'normal: primary healthy', mode: { kind: 'ok' } },
            { name: 'primary 503 → secondary, circuit closed', mode: { kind: 'status', status: 503 } },
            {
              name: 'primary 429 (Retry-After: 0) → secondary, circuit closed',
              mode: { kind: 'status', status: 429, retryAfterSeconds: 0 },
            },
          ],
          storeKind,
        )),
      );
    }
    circuits.push(await circuitScenario('primary 503, default circuit', { kind: 'status', status: 503 }, { requests: 1000 }));
    circuits.push(
      await circuitScenario(
        'primary 429 with Retry-After: 1, default circuit',
        { kind: 'status', status: 429, retryAfterSeconds: 1 },
        { durationMs: 2500, markMs: 1500 },
      ),
    );
  } finally {
    await agent.close();
    await primary.close();
    await secondary.close();
    await database.close();
    if (process.env.REDIS_URL && redisPrefixes.length > 0) {
      const cleaner = new Redis(process.env.REDIS_URL);
      for (const prefix of redisPrefixes) {
        const keys = await cleaner.keys(`${prefix}*`);
        if (keys.length > 0) await cleaner.del(...keys);
      }
      cleaner.disconnect();
    }
  }

  const section = renderFailoverSection(timed, circuits, {
    date: new Date().toISOString().slice(0, 10),
    machine: `${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`,
    store: process.env.REDIS_URL
      ? 'the in-process store and Redis (REDIS_URL) for the first table, Redis for the second'
      : 'in-process store',
    database: process.env.DATABASE_URL ? 'PostgreSQL (DATABASE_URL)' : 'embedded PostgreSQL (PGlite, WebAssembly on the benchmark thread)',
    trials,
    warmup,
  });
  console.log(section);
  writeSection(join(root, 'bench/RESULTS.md'), 'failover', section, '## Failover');
}

await main();
