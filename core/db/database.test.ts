import { test } from 'vitest';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from './database.js';
import { createTestDatabase } from './testing.js';

test('migrations apply and are idempotent; concurrent transactions do not mix', async () => {
  const db = await createTestDatabase();
  try {
    await db.migrate();
    const columns = await db.knex('api_keys').columnInfo();
    assert.ok('secret_hash' in columns);
    // Two transactions interleaving on the pool: each sees only its own uncommitted row,
    // and the one that rolls back leaves nothing behind.
    const row = (id: string) => ({ id, kind: 'managed', name: id, secret_hash: id.padEnd(64, '0'), secret_hint: 'h', source: 'api' });
    await Promise.all([
      db.knex.transaction(async (trx) => {
        await trx('api_keys').insert(row('k1'));
        await new Promise((r) => setTimeout(r, 20));
        assert.equal((await trx('api_keys').where({ id: 'k1' })).length, 1);
      }),
      db.knex
        .transaction(async (trx) => {
          await trx('api_keys').insert(row('k2'));
          throw new Error('roll back');
        })
        .catch(() => undefined),
    ]);
    const ids = (await db.knex('api_keys').select('id')).map((r: { id: string }) => r.id);
    assert.deepEqual(ids, ['k1']);
  } finally {
    await db.close();
  }
});

test('embedded database keeps its rows across a restart', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-db-'));
  try {
    const first = await openDatabase({ kind: 'embedded', dataDir: dir });
    await first.migrate();
    await first.knex('api_keys').insert({ id: 'kept', kind: 'managed', name: 'kept', secret_hash: 'a'.repeat(64), secret_hint: 'h', source: 'api' });
    await first.close();
    const second = await openDatabase({ kind: 'embedded', dataDir: dir });
    await second.migrate();
    const rows = await second.knex('api_keys').select('id');
    assert.deepEqual(rows, [{ id: 'kept' }]);
    await second.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
