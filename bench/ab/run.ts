// Is a hot-path change worth keeping? The gateway of a git revision (A) against the working
// tree's (B) under the overhead load, one at a time on the same simulator, PostgreSQL, Redis and
// key, alternating A B B A A B B A… so that drift in this shared VM's speed falls on both. One
// run's noise here is 5–15 % (bench/RESULTS.md); the medians of several rounds are what to quote.
//
//   npx tsx bench/ab/run.ts <revision>   (BENCH_ROUNDS=4 pairs, BENCH_DURATION=8, BENCH_WARMUP=15,
//                                          BENCH_KEY=plain|enforced, BENCH_NODE; DATABASE_URL and
//                                          REDIS_URL as for bench:overhead; BENCH_B_FLAGS: Node/V8
//                                          flags for B alone, e.g. `HEAD` against the same code with
//                                          BENCH_B_FLAGS=--no-parallel-scavenge to judge a flag;
//                                          BENCH_B_WRITER=process: B with SVC_AUDIT_WRITER=off and
//                                          the audit writer as its own process beside it, both
//                                          counted, the gateway process alone printed too)
//
// Revision A is exported with `git archive` and compiled like the Dockerfile into .data/ab/<sha>;
// it runs on this checkout's node_modules, so compare revisions with the same dependencies.
import { execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { openDatabase } from '../../core/db/index.js';
import { generateSecret } from '../../core/keys/index.js';
import { deleteKeysWithPrefix } from '../../core/store/testing.js';
import { createBenchDatabase, createBenchKey, dropBenchDatabase } from '../shared/databases.js';
import { writeSimCatalogue } from '../shared/catalogue.js';
import { measureLoad, median, type LoadMeasurement } from '../shared/load.js';
import { compileTree, serverNode, startBenchAuditWriter, startBenchGateway, startSimulator, stopProcess } from '../shared/start-process.js';

const root = resolve(import.meta.dirname, '../..');
const ports = { sim: 18390, gateway: 18391 };
const rounds = Number(process.env.BENCH_ROUNDS ?? 4);
const load = { duration: Number(process.env.BENCH_DURATION ?? 8), connections: 32 };
const flagsB = (process.env.BENCH_B_FLAGS ?? '').split(' ').filter(Boolean);
const ownWriterB = process.env.BENCH_B_WRITER === 'process';

/** Revision `rev` compiled into .data/ab/<sha>/build (reused when already there); its gateway entry. */
function buildRevision(rev: string): { sha: string; entry: string } {
  const sha = execFileSync('git', ['rev-parse', '--verify', `${rev}^{commit}`], { cwd: root, encoding: 'utf8' }).trim();
  const dir = join(root, '.data', 'ab', sha);
  const entry = join(dir, 'build', 'gateway', 'src', 'main.js');
  if (!existsSync(entry)) {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(join(dir, 'src'), { recursive: true });
    const archive = execFileSync('git', ['archive', '--format=tar', sha], { cwd: root, maxBuffer: 1 << 30 });
    execFileSync('tar', ['-x', '-C', join(dir, 'src')], { input: archive });
    compileTree(join(dir, 'src'), join(dir, 'build'));
  }
  return { sha, entry };
}

/** The migrations revision `sha` defines, by the names its ledger records (file names without .ts). */
function migrationsOf(sha: string): Set<string> {
  const files = execFileSync('git', ['ls-tree', '--name-only', `${sha}:core/db/migrations`], { cwd: root, encoding: 'utf8' });
  return new Set(
    files
      .split('\n')
      .filter((file) => /^\d{3}_.*\.ts$/.test(file) && !file.endsWith('.test.ts'))
      .map((file) => file.replace(/\.ts$/, '')),
  );
}

/**
 * One side's database with a key in it (its secret): migrated by this tree, and with `known`, its
 * ledger trimmed to those migrations so an older revision's migrator finds nothing to refuse.
 */
async function sideDatabase(
  options: { databaseUrl: string | undefined; dataDir: string; pepper: string },
  known?: Set<string>,
): Promise<string> {
  const secret = await createBenchKey({ ...options, name: 'ab' });
  if (known) {
    const db = await openDatabase(
      options.databaseUrl ? { kind: 'postgres', url: options.databaseUrl } : { kind: 'embedded', dataDir: options.dataDir },
    );
    try {
      await db
        .knex('knex_migrations')
        .whereNotIn('name', [...known])
        .delete();
    } finally {
      await db.close();
    }
  }
  return secret;
}

/** The round order: A B B A, repeated, so neither side always runs first or last. */
function roundOrder(pairs: number): ('A' | 'B')[] {
  const order: ('A' | 'B')[] = [];
  for (let i = 0; i < pairs; i += 1) order.push(...(i % 2 === 0 ? (['A', 'B'] as const) : (['B', 'A'] as const)));
  return order;
}

async function main(): Promise<void> {
  const rev = process.argv[2];
  if (!rev) throw new Error('usage: npx tsx bench/ab/run.ts <revision>  (A = that revision, B = the working tree)');
  const a = buildRevision(rev);
  const dir = mkdtempSync(join(tmpdir(), 'svc-ab-'));
  const children: ChildProcess[] = [];
  // Each side its own database, migrated by this tree and with its own key: A's ledger is then
  // trimmed to the migrations A knows (sideDatabase), since its migrator refuses a database that
  // lists migrations it has never heard of (a newer tree's), and the tables they added harm it not.
  const databaseUrls = process.env.DATABASE_URL
    ? { A: await createBenchDatabase(process.env.DATABASE_URL, '_a'), B: await createBenchDatabase(process.env.DATABASE_URL, '_b') }
    : undefined;
  const storePrefix = `ab-${process.pid}:`;
  try {
    const pepper = generateSecret('admin');
    const sides = {
      A: await sideDatabase({ databaseUrl: databaseUrls?.A, dataDir: join(dir, 'data-A'), pepper }, migrationsOf(a.sha)),
      B: await sideDatabase({ databaseUrl: databaseUrls?.B, dataDir: join(dir, 'data-B'), pepper }),
    };
    const catalogue = writeSimCatalogue(dir, ports.sim);
    children.push(await startSimulator(ports.sim, 'ab'));
    // The simulator and the load generator warm up before any round: otherwise the first round,
    // always A's, pays for their JIT (seen: A's first round 20-32 % dearer than the median of its others).
    await measureLoad('warm-up', `http://127.0.0.1:${ports.sim}/v1/chat/completions`, {}, [], { duration: 1, connections: 32 });
    const results: { side: 'A' | 'B'; m: LoadMeasurement }[] = [];
    for (const side of roundOrder(rounds)) {
      const options = {
        pepper,
        catalogue,
        dataDir: join(dir, `data-${side}`),
        storePrefix: `${storePrefix}${side}:`,
        databaseUrl: databaseUrls?.[side],
      };
      const writer = side === 'B' && ownWriterB ? await startBenchAuditWriter(options) : undefined;
      const gateway = await startBenchGateway({
        ...options,
        port: ports.gateway,
        ...(side === 'A' ? { entry: a.entry } : { nodeOptions: flagsB, ...(writer && { env: { SVC_AUDIT_WRITER: 'off' } }) }),
      });
      try {
        const m = await measureLoad(
          side,
          `http://127.0.0.1:${ports.gateway}/v1/chat/completions`,
          { authorization: `Bearer ${sides[side]}` },
          writer ? [gateway, writer] : [gateway],
          load,
        );
        results.push({ side, m });
        console.log(
          `${side}: ${m.requestsPerSecond.toFixed(0)} req/s, ${m.cpuMicrosPerRequest?.toFixed(0)} µs CPU per request ` +
            `(serving thread ${m.mainThreadMicrosPerRequest?.toFixed(0)}${
              writer
                ? `; gateway process ${m.cpuMicrosPerRequestByServer[0]?.toFixed(0)}, writer ${m.cpuMicrosPerRequestByServer[1]?.toFixed(0)}`
                : ''
            }), p99 ${m.p99Ms} ms, ${m.failed} failed`,
        );
      } finally {
        await stopProcess(gateway);
        if (writer) await stopProcess(writer);
      }
    }
    const summary = (side: 'A' | 'B') => {
      const of = results.filter((r) => r.side === side).map((r) => r.m);
      return {
        rps: median(of.map((m) => m.requestsPerSecond)),
        cpu: median(of.map((m) => m.cpuMicrosPerRequest ?? 0)),
        main: median(of.map((m) => m.mainThreadMicrosPerRequest ?? 0)),
        gatewayProcess: median(of.map((m) => m.cpuMicrosPerRequestByServer[0] ?? 0)),
      };
    };
    const [sa, sb] = [summary('A'), summary('B')];
    console.log(`\nmedians over ${rounds} rounds each (${load.duration} s after a warm-up; servers on ${serverNode}):`);
    console.log(`| | req/s | CPU µs/request | serving thread µs/request |\n|---|---:|---:|---:|`);
    console.log(`| A ${a.sha.slice(0, 7)} | ${sa.rps.toFixed(0)} | ${sa.cpu.toFixed(0)} | ${sa.main.toFixed(0)} |`);
    console.log(
      `| B working tree${flagsB.length ? ` ${flagsB.join(' ')}` : ''}${ownWriterB ? ', own writer process' : ''} | ${sb.rps.toFixed(0)} | ${sb.cpu.toFixed(0)} | ${sb.main.toFixed(0)} |`,
    );
    console.log(`| B / A | ${(sb.rps / sa.rps).toFixed(3)} | ${(sb.cpu / sa.cpu).toFixed(3)} | ${(sb.main / sa.main).toFixed(3)} |`);
    if (ownWriterB)
      console.log(
        `\nB's gateway process alone (its writer process not counted): ${sb.gatewayProcess.toFixed(0)} µs per request, ` +
          `${(sb.gatewayProcess / sa.cpu).toFixed(3)} of A's whole process`,
      );
  } finally {
    for (const child of children) child.kill('SIGKILL');
    for (const url of Object.values(databaseUrls ?? {})) await dropBenchDatabase(process.env.DATABASE_URL!, url);
    if (process.env.REDIS_URL) await deleteKeysWithPrefix(process.env.REDIS_URL, storePrefix);
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
