// The audit batch insert sends a batch's rows as one JSON document (core/audit/insert.ts): every
// column the row carries must arrive, money exactly, client-chosen text even when PostgreSQL
// could not store it as sent, and a batch retried after it committed must change nothing.
import { test } from 'vitest';
import assert from 'node:assert/strict';
import { createTestDatabase } from '../db/testing.js';
import { insertAuditBatch } from './insert.js';
import { AUDIT_INSERT_COLUMNS, toRow } from './rows.js';
import { cleanupStack, sampleRecord } from './testing.js';

test('the insert names every column a row carries, and only those', () => {
  assert.deepEqual([...AUDIT_INSERT_COLUMNS].sort(), Object.keys(toRow(sampleRecord(1, { autoRouted: true }))).sort());
});

test('every field round-trips: exact money, attempts, nulls, booleans, non-ASCII text', async () => {
  const defer = cleanupStack();
  const db = defer(await createTestDatabase(), (d) => d.close());
  const full = sampleRecord(1, {
    keyId: 'key_round',
    payerId: null,
    model: 'modèle-ü 😀',
    costUsd: 123_456.123456789,
    status: 502,
    code: 'supplier_error',
    failover: true,
    autoRouted: true,
    session: 'quote " back \\ tab \t newline \n',
    attempts: [
      {
        supplier: 'sim-us',
        region: 'us',
        startedAt: 1_741_942_800_001,
        latencyMs: 12,
        outcome: 'failed',
        status: 503,
        code: 'supplier_error',
      },
      { supplier: 'sim-eu', region: 'eu', startedAt: 1_741_942_800_020, latencyMs: 7, outcome: 'failed', status: 502, selectionMs: 0.5 },
    ],
  });
  const tiny = sampleRecord(2, { keyId: 'key_round', costUsd: 1e-9, supplier: null, region: null, attempts: [] });
  assert.deepEqual(await insertAuditBatch(db.knex, [full, tiny]), { inserted: 2, skipped: 0 });
  const rows = await db.knex('audit_log').where({ key_id: 'key_round' }).orderBy('request_id');
  assert.equal(rows.length, 2);
  const [a, b] = rows as Record<string, unknown>[];
  assert.equal(a!.cost_usd, '123456.123456789');
  assert.equal(b!.cost_usd, '0.000000001');
  assert.equal(new Date(a!.ts as Date).toISOString(), full.timestamp);
  assert.equal(a!.payer_id, null);
  assert.equal(a!.model, 'modèle-ü 😀');
  assert.equal(a!.session, full.session);
  assert.equal(a!.failover, true);
  assert.equal(a!.auto_routed, true);
  assert.equal(b!.auto_routed, false);
  assert.equal(a!.status, 502);
  assert.equal(a!.code, 'supplier_error');
  assert.deepEqual(a!.attempts, [
    {
      supplier: 'sim-us',
      region: 'us',
      started_at: 1_741_942_800_001,
      latency_ms: 12,
      outcome: 'failed',
      status: 503,
      code: 'supplier_error',
    },
    { supplier: 'sim-eu', region: 'eu', started_at: 1_741_942_800_020, latency_ms: 7, outcome: 'failed', status: 502, selection_ms: 0.5 },
  ]);
  assert.deepEqual(b!.attempts, []);
  assert.equal(b!.supplier, null);
});

test('a session id with NUL or half a surrogate pair keeps its row: NUL dropped (as parseAuditRecord does), U+FFFD for the half pair', async () => {
  const defer = cleanupStack();
  const db = defer(await createTestDatabase(), (d) => d.close());
  const records = [
    sampleRecord(1, { keyId: 'key_text', session: 'a\u0000b' }),
    sampleRecord(2, { keyId: 'key_text', session: 'lone \ud800 high' }),
    sampleRecord(3, { keyId: 'key_text', session: '\udc00 lone low' }),
    sampleRecord(4, { keyId: 'key_text', session: 'pair 😀 kept' }),
  ];
  assert.deepEqual(await insertAuditBatch(db.knex, records), { inserted: 4, skipped: 0 });
  const sessions = (await db.knex('audit_log').where({ key_id: 'key_text' }).orderBy('request_id').pluck('session')) as string[];
  assert.deepEqual(sessions, ['ab', 'lone \ufffd high', '\ufffd lone low', 'pair 😀 kept']);
});

test('a batch written again (a retry after its commit) inserts nothing twice and says so', async () => {
  const defer = cleanupStack();
  const db = defer(await createTestDatabase(), (d) => d.close());
  const records = Array.from({ length: 5 }, (_, i) => sampleRecord(i, { keyId: 'key_retry' }));
  assert.deepEqual(await insertAuditBatch(db.knex, records.slice(0, 3)), { inserted: 3, skipped: 0 });
  // Three rows exist and one record repeats within the batch: 4 skipped. The same request id at
  // another time is another row; the same (request id, time) is not.
  const sameIdLater = sampleRecord(0, { keyId: 'key_retry', timestamp: new Date(Date.parse(records[0]!.timestamp) + 1).toISOString() });
  assert.deepEqual(await insertAuditBatch(db.knex, [...records, records[1]!, sameIdLater]), { inserted: 3, skipped: 4 });
  const count = await db.knex('audit_log').where({ key_id: 'key_retry' }).count<{ count: string }[]>('* as count');
  assert.equal(Number(count[0]!.count), 6);
});
