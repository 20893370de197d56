// The set-up the benchmarks on real services share: a database of their own on DATABASE_URL, a
// key prefix of their own on REDIS_URL, a scratch directory, the bench key and a simulator, all
// removed afterwards, whatever happens in between.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateSecret } from '../../core/keys/index.js';
import { deleteKeysWithPrefix } from '../../core/store/testing.js';
import { createBenchDatabase, createBenchKey, dropBenchDatabase } from './databases.js';
import { startSimulator } from './start-process.js';

/** What a benchmark on the real services runs against. */
export interface BenchServices {
  /** The benchmark's own database (a URL on DATABASE_URL's server), migrated, with the key. */
  databaseUrl: string;
  redisUrl: string;
  /** Redis key prefix for the gateways' store, deleted afterwards. */
  storePrefix: string;
  /** Scratch directory, removed afterwards. */
  dir: string;
  pepper: string;
  /** The bench key's secret (stored under `pepper`). */
  secret: string;
  simulator: ChildProcess;
}

/**
 * Runs `bench` on the real PostgreSQL and Redis (DATABASE_URL, REDIS_URL, both required) with a
 * simulator on `simulatorPort`, and cleans everything up afterwards.
 */
export async function withBenchServices<T>(
  name: string,
  simulatorPort: number,
  bench: (services: BenchServices) => Promise<T>,
): Promise<T> {
  const serverUrl = process.env.DATABASE_URL;
  const redisUrl = process.env.REDIS_URL;
  if (!serverUrl || !redisUrl) throw new Error(`bench/${name} needs DATABASE_URL and REDIS_URL (real PostgreSQL and Redis)`);
  const dir = mkdtempSync(join(tmpdir(), `svc-${name}-`));
  const databaseUrl = await createBenchDatabase(serverUrl);
  const storePrefix = `${name}-${process.pid}:`;
  let simulator: ChildProcess | undefined;
  try {
    const pepper = generateSecret('admin');
    const secret = await createBenchKey({ databaseUrl, dataDir: join(dir, 'data'), pepper, name });
    simulator = await startSimulator(simulatorPort, name);
    return await bench({ databaseUrl, redisUrl, storePrefix, dir, pepper, secret, simulator });
  } finally {
    simulator?.kill('SIGKILL');
    await dropBenchDatabase(serverUrl, databaseUrl);
    await deleteKeysWithPrefix(redisUrl, storePrefix);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs a benchmark's main function; a failure is printed and exits 1. */
export function runBench(main: () => Promise<void>): void {
  main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
