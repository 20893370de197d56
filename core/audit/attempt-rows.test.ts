// The attempts column is snake_case in the row and the Management API; rows written before
// migration 009 (camelCase) are rewritten by it, and still read correctly if one slips through.
import { test } from 'vitest';
import assert from 'node:assert/strict';
import { createTestDatabase } from '../db/testing.js';
import { up as rewriteAttempts } from '../db/migrations/009_audit_attempts_snake_case.js';
import { insertAuditBatch } from './insert.js';
import { AuditRepository } from './repository.js';
import { cleanupStack, sampleRecord } from './testing.js';

const attempts = [
  {
    supplier: 'sim-us',
    region: 'US',
    startedAt: 1_741_942_800_001,
    latencyMs: 12,
    outcome: 'failed' as const,
    status: 429,
    code: 'rate_limited',
  },
  {
    supplier: 'sim-eu',
    region: 'EU',
    startedAt: 1_741_942_800_020,
    latencyMs: 190,
    outcome: 'ok' as const,
    status: 200,
    selectionMs: 0.042,
  },
];

test('attempts are stored snake_case and read back as the record had them', async () => {
  const defer = cleanupStack();
  const db = defer(await createTestDatabase(), (d) => d.close());
  await insertAuditBatch(db.knex, [sampleRecord(1, { keyId: 'key_snake', attempts })]);
  const [stored] = (await db.knex('audit_log').where({ key_id: 'key_snake' }).select('attempts')) as { attempts: unknown[] }[];
  assert.deepEqual(stored!.attempts, [
    {
      supplier: 'sim-us',
      region: 'US',
      started_at: 1_741_942_800_001,
      latency_ms: 12,
      outcome: 'failed',
      status: 429,
      code: 'rate_limited',
    },
    { supplier: 'sim-eu', region: 'EU', started_at: 1_741_942_800_020, latency_ms: 190, outcome: 'ok', status: 200, selection_ms: 0.042 },
  ]);
  const page = await new AuditRepository(db.knex).listForKey('key_snake', { limit: 10 });
  assert.deepEqual(page.data[0]!.attempts, attempts);
});

test('migration 009 rewrites camelCase rows in place, keeping order, and leaves snake_case rows alone', async () => {
  const defer = cleanupStack();
  const db = defer(await createTestDatabase(), (d) => d.close());
  await insertAuditBatch(db.knex, [sampleRecord(1, { keyId: 'key_old', attempts }), sampleRecord(2, { keyId: 'key_new', attempts })]);
  // A row as the code before the migration wrote it.
  await db
    .knex('audit_log')
    .where({ key_id: 'key_old' })
    .update({ attempts: JSON.stringify(attempts) });
  const repository = new AuditRepository(db.knex);
  assert.deepEqual((await repository.listForKey('key_old', { limit: 1 })).data[0]!.attempts, attempts, 'an old row still reads right');
  const before = (await db.knex('audit_log').where({ key_id: 'key_new' }).first('attempts')) as { attempts: unknown };

  await rewriteAttempts(db.knex);

  const rows = (await db.knex('audit_log').whereIn('key_id', ['key_old', 'key_new']).orderBy('key_id').select('key_id', 'attempts')) as {
    key_id: string;
    attempts: Record<string, unknown>[];
  }[];
  const [newRow, oldRow] = rows;
  assert.deepEqual(oldRow!.attempts, newRow!.attempts, 'the rewritten row equals one written snake_case');
  assert.deepEqual(newRow!.attempts, before.attempts, 'a snake_case row is untouched');
  assert.ok(!JSON.stringify(oldRow!.attempts).includes('latencyMs'));
});
