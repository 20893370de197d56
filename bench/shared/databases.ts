// Benchmarks that run on PostgreSQL get a database of their own, dropped afterwards.
import knexFactory from 'knex';

/** A fresh database on the server of `url`, so a benchmark never touches another's data. */
export async function createBenchDatabase(url: string): Promise<string> {
  const name = `svc_bench_${process.pid}`;
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
