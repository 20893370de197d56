import { randomBytes } from 'node:crypto';
import knexFactory from 'knex';
import { openDatabase, type Database } from './database.js';

/**
 * A fresh, migrated database for one test: a new PostgreSQL database on the server named by
 * DATABASE_URL (dropped on close), or in-memory embedded PGlite when DATABASE_URL is unset.
 * Tests that run in parallel therefore never see each other's rows.
 */
export async function createTestDatabase(env: Record<string, string | undefined> = process.env): Promise<Database> {
  const url = env.DATABASE_URL;
  if (!url) {
    const db = await openDatabase({ kind: 'embedded', dataDir: 'memory' });
    await db.migrate();
    return db;
  }
  const name = `svc_test_${randomBytes(6).toString('hex')}`;
  const admin = knexFactory({ client: 'pg', connection: url, pool: { min: 0, max: 1 } });
  try {
    await admin.raw('create database ??', [name]);
  } finally {
    await admin.destroy();
  }
  const testUrl = new URL(url);
  testUrl.pathname = `/${name}`;
  const db = await openDatabase({ kind: 'postgres', url: testUrl.toString(), poolMax: 5 });
  await db.migrate();
  return {
    ...db,
    close: async () => {
      await db.close();
      const dropper = knexFactory({ client: 'pg', connection: url, pool: { min: 0, max: 1 } });
      try {
        await dropper.raw('drop database if exists ?? with (force)', [name]);
      } finally {
        await dropper.destroy();
      }
    },
  };
}
