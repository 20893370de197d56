import { expect, onTestFinished, test } from 'vitest';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { knexLog, openDatabase, type Database } from './database.js';
import { createTestDatabase } from './testing.js';

/** Closes the database after the test, whether it passed or not (a second close is harmless). */
function closedAfterTest(db: Database): Database {
  let closing: Promise<void> | undefined;
  const close = () => (closing ??= db.close());
  onTestFinished(close);
  return { ...db, close };
}

test('migrations apply and are idempotent; concurrent transactions do not mix', async () => {
  const db = closedAfterTest(await createTestDatabase());
  await db.migrate();
  const columns = await db.knex('api_keys').columnInfo();
  assert.ok('secret_hash' in columns);
  // Two transactions on the pool at once: k1 is inserted, then another transaction begins,
  // inserts k2 and rolls back after k1's transaction looked. On PostgreSQL k1's transaction
  // looks while k2 is inserted and uncommitted; embedded PGlite runs one transaction at a time
  // (its socket server holds the database for the open transaction), so there k2's waits.
  const row = (id: string) => ({ id, kind: 'managed', name: id, secret_hash: id.padEnd(64, '0'), secret_hint: 'h', source: 'api' });
  const latch = () => {
    let open!: () => void;
    const opened = new Promise<void>((resolve) => (open = resolve));
    return { open, opened };
  };
  const k1Inserted = latch();
  const k2Inserted = latch();
  const k1Looked = latch();
  const rolledBack = k1Inserted.opened.then(() =>
    db.knex
      .transaction(async (trx) => {
        await trx('api_keys').insert(row('k2'));
        k2Inserted.open();
        await k1Looked.opened;
        throw new Error('roll back');
      })
      .catch((error: Error) => error.message),
  );
  let seenInside: string[] = [];
  await db.knex.transaction(async (trx) => {
    await trx('api_keys').insert(row('k1'));
    k1Inserted.open();
    if (db.kind === 'postgres') await k2Inserted.opened;
    seenInside = (await trx('api_keys').select('id')).map((r: { id: string }) => r.id);
    k1Looked.open();
  });
  assert.equal(await rolledBack, 'roll back');
  assert.deepEqual(seenInside, ['k1'], 'the open transaction sees its own row, not the other one');
  const ids = (await db.knex('api_keys').select('id')).map((r: { id: string }) => r.id);
  assert.deepEqual(ids, ['k1']);
});

test('embedded database keeps its rows across a restart', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-db-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  // From an empty directory: this is the test that runs every migration in this process, from
  // nothing (elsewhere databases are copies of a migrated template or snapshot, cached between
  // runs), so the migrations' coverage rests on it. Do not seed it.
  const first = closedAfterTest(await openDatabase({ kind: 'embedded', dataDir: dir }));
  await first.migrate();
  await first
    .knex('api_keys')
    .insert({ id: 'kept', kind: 'managed', name: 'kept', secret_hash: 'a'.repeat(64), secret_hint: 'h', source: 'api' });
  await first.close();
  const second = closedAfterTest(await openDatabase({ kind: 'embedded', dataDir: dir }));
  await second.migrate();
  const rows = await second.knex('api_keys').select('id');
  assert.deepEqual(rows, [{ id: 'kept' }]);
});

test("knex's own warnings are JSON log lines, not console text (a log pipeline reads one JSON document per line)", () => {
  const lines: string[] = [];
  const log = knexLog({ write: (line: string) => void lines.push(line) });
  log.warn!('Connection Error: Error: Connection terminated unexpectedly');
  log.error!(new Error('pool exhausted'));
  expect(lines.map((l) => JSON.parse(l) as Record<string, unknown>)).toMatchObject([
    { level: 40, service: 'database', component: 'knex', msg: 'Connection Error: Error: Connection terminated unexpectedly' },
    { level: 50, service: 'database', component: 'knex', msg: 'pool exhausted' },
  ]);
});
