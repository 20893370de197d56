// Overhead benchmark (not a test): the same load — fixed concurrency, fixed duration,
// non-streaming chat completions — against (a) the supplier simulator directly, (b) a bare
// Node reverse proxy in front of it, (c) our gateway in front of it, in one run on one machine.
// Prints requests/s and latency percentiles, the ratios (c)/(a) and (c)/(b), and rewrites its
// own section of bench/RESULTS.md (other sections are kept). Each server is its own process;
// the load generator runs in this one.
//
//   npm run bench:overhead            (BENCH_DURATION=15 BENCH_CONNECTIONS=32 to change the load)
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { openDatabase } from '../../core/db/index.js';
import { generateSecret, KeyRepository } from '../../core/keys/index.js';
import { MemoryStore } from '../../core/store/index.js';
import { deleteKeysWithPrefix } from '../../core/store/testing.js';
import { WalletLedger } from '../../core/wallets/index.js';
import { renderResults, type Measurement } from './results.js';
import { createBenchDatabase, dropBenchDatabase } from '../shared/databases.js';
import { writeSimCatalogue } from '../shared/catalogue.js';
import { measureLoad, warmupSeconds } from '../shared/load.js';
import {
  serverNode,
  serverNodeVersion,
  startBareProxy,
  startBenchAuditWriter,
  startBenchGateway,
  startSimulator,
} from '../shared/start-process.js';
import { startRedisCluster } from '../../test/support/redis-cluster.js';

const root = resolve(import.meta.dirname, '../..');
const duration = Number(process.env.BENCH_DURATION ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
const ports = { sim: 18_090, proxy: 18_095, gateway: 18_080, workers: 18_081, cluster: 18_082, appendOnly: 18_083, again: 18_084 };

/** The shared load (bench/shared/load.ts) at this benchmark's duration and concurrency. */
const load = (name: string, url: string, headers: Record<string, string>, servers: ChildProcess[]): Promise<Measurement> =>
  measureLoad(name, url, headers, servers, { duration, connections });

/**
 * Writes the overhead section into bench/RESULTS.md between `<!-- overhead:start/end -->`,
 * keeping the other sections (the streaming benchmark's). A file from before the markers has the
 * section unmarked, from its heading to the next marker or the end; that part is replaced.
 */
function writeOverheadSection(path: string, section: string): void {
  const start = '<!-- overhead:start -->';
  const end = '<!-- overhead:end -->';
  const block = `${start}\n${section.trim()}\n${end}`;
  const text = existsSync(path) ? readFileSync(path, 'utf8') : '# Benchmark results\n';
  const from = text.indexOf(start);
  const to = text.indexOf(end);
  let next: string;
  if (from >= 0 && to > from) next = text.slice(0, from) + block + text.slice(to + end.length);
  else {
    const legacy = text.search(/^## Overhead/m);
    if (legacy < 0) next = `${text.trimEnd()}\n\n${block}\n`;
    else {
      const marker = text.indexOf('<!-- ', legacy);
      next = `${text.slice(0, legacy)}${block}\n${marker >= 0 ? `\n${text.slice(marker)}` : ''}`;
    }
  }
  writeFileSync(path, next);
}

/** Which Node ran the servers and which the load generator (they differ with BENCH_NODE). */
function nodeLine(): string {
  return serverNode === process.execPath
    ? `Node ${process.version}`
    : `Node ${serverNodeVersion()} for the servers (BENCH_NODE), ${process.version} for the load generator`;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-'));
  const children: ChildProcess[] = [];
  const cleanups: (() => Promise<void>)[] = [];
  try {
    const pepper = generateSecret('admin');
    // With DATABASE_URL the gateway runs as in production (PostgreSQL and, with REDIS_URL, Redis
    // in their own processes); without it, on the embedded defaults (PGlite inside the gateway).
    const databaseUrl = process.env.DATABASE_URL ? await createBenchDatabase(process.env.DATABASE_URL) : undefined;
    if (databaseUrl) cleanups.push(() => dropBenchDatabase(process.env.DATABASE_URL!, databaseUrl));
    if (process.env.REDIS_URL) cleanups.push(() => deleteKeysWithPrefix(process.env.REDIS_URL!, `bench-${process.pid}:`));
    const db = await openDatabase(databaseUrl ? { kind: 'postgres', url: databaseUrl } : { kind: 'embedded', dataDir: join(dir, 'data') });
    await db.migrate();
    const keys = new KeyRepository(db.knex, pepper);
    const { secret } = await keys.create({ kind: 'managed', name: 'bench', source: 'api' });
    // (d): the same load through a key with every check of the enforcement step: rate limit,
    // budget reservation and a payer wallet (limits far above what the run spends).
    const enforced = await keys.create({
      kind: 'managed',
      name: 'bench-enforced',
      source: 'api',
      rateLimitRpm: 1_000_000,
      budgetLimitUsd: 1_000_000,
      budgetPeriod: 'monthly',
      payerId: 'org:bench',
    });
    const scratch = new MemoryStore();
    await new WalletLedger(db.knex, scratch).credit('org:bench', 1_000_000, 'benchmark funds', 'bench');
    await scratch.close();
    await db.close();
    const catalogue = writeSimCatalogue(dir, ports.sim);

    children.push(await startSimulator(ports.sim, 'bench'));
    children.push(await startBareProxy(ports.proxy, ports.sim));
    const gatewayOptions = {
      port: ports.gateway,
      pepper,
      catalogue,
      dataDir: join(dir, 'data'),
      storePrefix: `bench-${process.pid}:`,
      databaseUrl,
    };
    children.push(await startBenchGateway(gatewayOptions));

    const auth = { authorization: `Bearer ${secret}` };
    const [simulator, proxy, gateway] = children as [ChildProcess, ChildProcess, ChildProcess];
    const measurements = [
      await load('(a) simulator direct', `http://127.0.0.1:${ports.sim}/v1/chat/completions`, auth, [simulator]),
      await load('(b) bare Node proxy', `http://127.0.0.1:${ports.proxy}/v1/chat/completions`, auth, [proxy]),
      await load('(c) svc gateway', `http://127.0.0.1:${ports.gateway}/v1/chat/completions`, auth, [gateway]),
      await load(
        '(d) svc gateway, enforced key',
        `http://127.0.0.1:${ports.gateway}/v1/chat/completions`,
        { authorization: `Bearer ${enforced.secret}` },
        [gateway],
      ),
    ];
    if (databaseUrl && process.env.REDIS_URL) {
      gateway.kill('SIGTERM'); // one gateway at a time: an idle one still takes memory and timers
      // (h): the audit writer as its own process (SVC_AUDIT_WRITER=off and `npm run
      // audit-writer`, the chart's separate writer Deployment): the serving process only appends.
      const appendOnly = { ...gatewayOptions, port: ports.appendOnly, dataDir: join(dir, 'data-append-only') };
      const writer = await startBenchAuditWriter(appendOnly);
      children.push(writer);
      const appending = await startBenchGateway({ ...appendOnly, env: { SVC_AUDIT_WRITER: 'off' } });
      children.push(appending);
      measurements.push(
        await load('(h) svc gateway, audit writer in its own process', `http://127.0.0.1:${ports.appendOnly}/v1/chat/completions`, auth, [
          appending,
          writer,
        ]),
      );
      appending.kill('SIGTERM');
      writer.kill('SIGTERM');
      // (e): SVC_WORKERS=2 (node:cluster) — needs the shared Redis and PostgreSQL the workers use.
      const workers = await startBenchGateway({
        ...gatewayOptions,
        port: ports.workers,
        dataDir: join(dir, 'data-workers'),
        env: { SVC_WORKERS: '2' },
      });
      children.push(workers);
      measurements.push(
        await load('(e) svc gateway, SVC_WORKERS=2', `http://127.0.0.1:${ports.workers}/v1/chat/completions`, auth, [workers]),
      );
      workers.kill('SIGTERM');
      // (f), (g): the store a Redis Cluster of three masters on loopback (docs/architecture.md,
      // "Store sharding"); the enforced key's reservation spans two shards (the key, its payer).
      const cluster = await startRedisCluster();
      cleanups.push(() => cluster.stop());
      const onCluster = await startBenchGateway({
        ...gatewayOptions,
        port: ports.cluster,
        dataDir: join(dir, 'data-cluster'),
        env: { REDIS_URL: cluster.url, SVC_REDIS_CLUSTER: 'true' },
      });
      children.push(onCluster);
      const clusterUrl = `http://127.0.0.1:${ports.cluster}/v1/chat/completions`;
      measurements.push(
        await load('(f) svc gateway, Redis Cluster', clusterUrl, auth, [onCluster]),
        await load('(g) svc gateway, Redis Cluster, enforced key', clusterUrl, { authorization: `Bearer ${enforced.secret}` }, [onCluster]),
      );
      onCluster.kill('SIGTERM');
    }
    // (i): (c) again, last, in a fresh process: how far this shared VM's speed drifted during
    // the run, i.e. how far apart rows measured minutes apart can be for no reason of their own.
    const again = await startBenchGateway({ ...gatewayOptions, port: ports.again, dataDir: join(dir, 'data-again') });
    children.push(again);
    measurements.push(
      await load('(i) svc gateway again, measured last', `http://127.0.0.1:${ports.again}/v1/chat/completions`, auth, [again]),
    );
    const markdown = renderResults(measurements, {
      date: new Date().toISOString().slice(0, 10),
      machine: `${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB, ${nodeLine()}`,
      store: `${databaseUrl ? 'PostgreSQL (own process)' : 'embedded PGlite (inside the gateway process)'}, ${process.env.REDIS_URL ? 'Redis' : 'in-process store'}`,
      duration,
      warmup: warmupSeconds,
      connections,
    });
    console.log(markdown);
    writeOverheadSection(join(root, 'bench/RESULTS.md'), markdown);
  } finally {
    for (const child of children) child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 1_000)); // let the gateway close its database connections
    for (const cleanup of cleanups) await cleanup().catch((e: unknown) => console.warn('cleanup failed', e));
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
