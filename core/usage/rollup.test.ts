// The hourly rollup equals the audit log: grouped by key, hour, model and supplier, costs summed
// in nano-USD exactly, and a batch inserted twice (a writer retrying after a crash) counted once.
import { expect, test } from 'vitest';
import { insertAuditBatch } from '../audit/insert.js';
import { cleanupStack, sampleRecord } from '../audit/testing.js';
import { createTestDatabase } from '../db/testing.js';
import { rollupRows } from './rollup.js';

test('groups by key, UTC hour, model and supplier, summing costs exactly', () => {
  const records = [
    sampleRecord(1, { costUsd: 0.000000001 }),
    sampleRecord(2, { costUsd: 0.1 + 0.2 - 0.3, status: 502, code: 'upstream_error' }),
    sampleRecord(3, { timestamp: '2025-03-14T10:00:00.000Z' }),
    sampleRecord(4, { model: null, supplier: null, status: 403, code: 'model_not_allowed', costUsd: 0 }),
  ];
  const rows = rollupRows(records);
  expect(rows.map((r) => [r.hour, r.model, r.supplier, r.requests, r.errors])).toEqual([
    ['2025-03-14T09:00:00.000Z', '', '', 1, 1],
    ['2025-03-14T09:00:00.000Z', 'gpt-4o-mini', 'sim-eu', 2, 1],
    ['2025-03-14T10:00:00.000Z', 'gpt-4o-mini', 'sim-eu', 1, 0],
  ]);
  expect(rows[1]!.costNano).toBe(1 + Math.round((0.1 + 0.2 - 0.3) * 1e9));
});

test('a batch inserted twice is rolled up once, equal to the audit log', async () => {
  const defer = cleanupStack();
  const db = defer(await createTestDatabase(), (d) => d.close());
  const batch = Array.from({ length: 25 }, (_, i) => sampleRecord(i, { keyId: 'key_rollup', costUsd: (i * 7919) / 1e9 }));
  await insertAuditBatch(db.knex, batch);
  await insertAuditBatch(db.knex, [...batch.slice(10), sampleRecord(99, { keyId: 'key_rollup' })]);
  const rollup = (await db.knex('usage_hourly').where({ key_id: 'key_rollup' }).sum({ n: 'requests', cost: 'cost_usd' }).first()) as {
    n: string;
    cost: string;
  };
  const audit = (await db.knex('audit_log').where({ key_id: 'key_rollup' }).count({ n: '*' }).sum({ cost: 'cost_usd' }).first()) as {
    n: string;
    cost: string;
  };
  expect(Number(rollup.n)).toBe(26);
  expect(Number(audit.n)).toBe(26);
  expect(rollup.cost).toBe(audit.cost);
});
