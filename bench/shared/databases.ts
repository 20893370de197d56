// Benchmarks that run on PostgreSQL get a database of their own, dropped afterwards.
import knexFactory from 'knex';
import { openDatabase } from '../../core/db/index.js';
import { KeyRepository } from '../../core/keys/index.js';

/** A fresh database on the server of `url`, so a benchmark never touches another's data (`suffix`: a second one). */
export async function createBenchDatabase(url: string, suffix = ''): Promise<string> {
  const name = `svc_bench_${process.pid}${suffix}`;
  const admin = knexFactory({ client: 'pg', connection: url, pool: { min: 0, max: 1 } });
  try {
    await admin.raw('drop database if exists ?? with (force)', [name]);
    await admin.raw('create database ??', [name]);
  } finally {
    await admin.destroy();
  }
  const target = new URL(url);
  target.pathname = `/${name}`;
  return target.toString();
}

/** Drops a database made by createBenchDatabase. */
export async function dropBenchDatabase(url: string, benchUrl: string): Promise<void> {
  const admin = knexFactory({ client: 'pg', connection: url, pool: { min: 0, max: 1 } });
  try {
    await admin.raw('drop database if exists ?? with (force)', [new URL(benchUrl).pathname.slice(1)]);
  } finally {
    await admin.destroy();
  }
}

/**
 * Migrates the benchmark's database (PostgreSQL at `databaseUrl`, else PGlite in `dataDir`) and
 * creates the key the load is sent with; its secret. BENCH_KEY=enforced gives the key a rate
 * limit and a monthly budget far above what a run spends, so every request runs enforcement.
 */
export async function createBenchKey(options: {
  databaseUrl: string | undefined;
  dataDir: string;
  pepper: string;
  name: string;
}): Promise<string> {
  const db = await openDatabase(
    options.databaseUrl ? { kind: 'postgres', url: options.databaseUrl } : { kind: 'embedded', dataDir: options.dataDir },
  );
  try {
    await db.migrate();
    const enforced = process.env.BENCH_KEY === 'enforced';
    const { secret } = await new KeyRepository(db.knex, options.pepper).create({
      kind: 'managed',
      name: options.name,
      source: 'api',
      ...(enforced && { rateLimitRpm: 1_000_000, budgetLimitUsd: 1_000_000, budgetPeriod: 'monthly' as const }),
    });
    return secret;
  } finally {
    await db.close();
  }
}
