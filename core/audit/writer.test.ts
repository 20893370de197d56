import { test } from 'vitest';
import assert from 'node:assert/strict';
import { createTestDatabase } from '../db/testing.js';
import { createTestStore } from '../store/testing.js';
import { AuditBuffer } from './buffer.js';
import type { AuditRecord } from './record.js';
import { AuditRepository } from './repository.js';
import { cleanupStack, memoryLogger, sampleRecord, waitFor } from './testing.js';
import { AuditWriter, type AuditWriterOptions } from './writer.js';

/** A writer over a fresh database and store, all closed after the test whether it passed or not. */
async function setup(options: Partial<AuditWriterOptions> = {}) {
  const defer = cleanupStack();
  const db = defer(await createTestDatabase(), (d) => d.close());
  const store = defer(createTestStore(), (s) => s.close());
  const logger = memoryLogger();
  const buffer = new AuditBuffer(store);
  const writer = defer(new AuditWriter(store, db.knex, { consumer: 'writer-1', blockMs: 200, logger, ...options }), (w) => w.stop());
  return {
    db,
    store,
    logger,
    buffer,
    writer,
    count: async () => Number((await db.knex('audit_log').count<{ count: string | number }[]>('* as count'))[0]?.count),
  };
}

test('a record goes buffer → stream → writer → audit_log with every field exact', async () => {
  const t = await setup();
  await t.writer.start();
  const record: AuditRecord = sampleRecord(1, {
    costUsd: 0.123456789,
    failover: true,
    code: null,
    session: 'sess-42',
    cachedInputTokens: 64,
    attempts: [
      { supplier: 'sim-us', region: 'us', startedAt: 1741942800001, latencyMs: 12, outcome: 'failed', status: 429, code: 'rate_limited' },
      { supplier: 'sim-eu', region: 'eu', startedAt: 1741942800020, latencyMs: 190, outcome: 'ok', status: 200, selectionMs: 0.042 },
    ],
  });
  const other = sampleRecord(2, {
    keyId: 'key_b',
    payerId: null,
    model: null,
    supplier: null,
    region: null,
    status: 403,
    code: 'billing_limit_reached',
    attempts: [],
    costUsd: 0,
  });
  await t.buffer.append(record);
  await t.buffer.append(other);
  await t.writer.flush();
  const repo = new AuditRepository(t.db.knex);
  assert.deepEqual((await repo.listForKey('key_a', { limit: 10 })).data, [record]);
  assert.deepEqual((await repo.listForKey('key_b', { limit: 10 })).data, [other]);
  const [row] = await t.db.knex('audit_log').where({ request_id: record.requestId }).select<{ cost_usd: string }[]>('cost_usd');
  assert.equal(row?.cost_usd, '0.123456789', 'cost is stored to the nano-dollar, no float noise');
  assert.deepEqual(
    await t.store.streamGroupInfo('audit', 'audit-writers'),
    { length: 0, pending: 0 },
    'written entries are acked and deleted',
  );
  assert.equal(t.writer.stats().written, 2);
  const partitions = await t.db.knex.raw<{ rows: { name: string }[] }>(
    "select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = 'audit_log'::regclass order by 1",
  );
  assert.deepEqual(
    partitions.rows.map((r) => r.name),
    ['audit_log_2025_03', 'audit_log_2025_04', 'audit_log_default'],
  );
  const [where] = await t.db
    .knex('audit_log')
    .where({ request_id: record.requestId })
    .select<{ part: string }[]>(t.db.knex.raw('tableoid::regclass::text as part'));
  assert.equal(where?.part, 'audit_log_2025_03', 'the row lives in its month partition');
});

test('1,200 records land in batches of at most 500, each batch one transaction with onBatch', async () => {
  const batches: number[] = [];
  const t = await setup({ onBatch: async (_trx, records) => void batches.push(records.length) });
  const records = Array.from({ length: 1200 }, (_, i) => sampleRecord(i, { costUsd: 0.000001 }));
  for (const r of records) await t.buffer.append(r);
  await t.writer.start();
  await t.writer.flush();
  assert.equal(await t.count(), 1200);
  assert.ok(batches.length >= 3, `expected at least 3 batches, got ${batches.join(', ')}`);
  assert.ok(batches.every((n) => n <= 500));
  assert.equal(
    batches.reduce((a, b) => a + b, 0),
    1200,
  );
  const totals = await new AuditRepository(t.db.knex).totalsForKey('key_a', new Date(0), new Date('2100-01-01'));
  assert.equal(totals.requests, 1200);
  assert.equal(totals.costUsd, 0.0012, 'sum of 1,200 micro-dollar costs is exact');
});

test('the same request appended twice (a retried batch) is one row, and onBatch sees it once', async () => {
  const debited: string[] = [];
  const t = await setup({ onBatch: async (_trx, records) => void debited.push(...records.map((r) => r.requestId)) });
  await t.writer.start();
  const record = sampleRecord(7);
  await t.buffer.append(record);
  await t.buffer.append(record); // same batch
  await t.writer.flush();
  await t.buffer.append(record); // later batch
  await t.writer.flush();
  assert.equal(await t.count(), 1);
  assert.deepEqual(debited, [record.requestId]);
  assert.equal(t.writer.stats().written, 1);
  assert.equal(t.writer.stats().duplicates, 2);
});

test('poison entries go to the dead-letter stream and do not block the records after them', async () => {
  const t = await setup();
  await t.writer.start();
  await t.store.streamAdd('audit', { r: '{not json' });
  await t.store.streamAdd('audit', { r: JSON.stringify({ ...sampleRecord(1), keyId: 42 }) });
  await t.buffer.append(sampleRecord(2, { session: 'nul\u0000in-session' })); // PostgreSQL text cannot hold U+0000
  await t.buffer.append(sampleRecord(3));
  await t.writer.flush();
  const rows = await t.db
    .knex('audit_log')
    .orderBy('request_id')
    .select<{ request_id: string; session: string | null }[]>('request_id', 'session');
  assert.deepEqual(rows, [
    { request_id: 'req_000002', session: 'nulin-session' },
    { request_id: 'req_000003', session: null },
  ]);
  assert.equal(t.writer.stats().deadLettered, 2);
  assert.deepEqual(await t.store.streamGroupInfo('audit:dead', 'nobody'), { length: 2, pending: 0 });
  assert.equal(t.logger.lines.filter((l) => l.msg.includes('dead-letter')).length, 2);
});

test('a record the database rejects is isolated by halving the batch; the rest is written', async () => {
  // A CHECK added for the test stands in for any data error (SQLSTATE class 23) on one row.
  const t = await setup();
  await t.db.knex.raw("alter table audit_log add constraint no_poison check (model is distinct from 'poison')");
  for (let i = 0; i < 9; i++) await t.buffer.append(sampleRecord(i, i === 5 ? { model: 'poison' } : {}));
  await t.writer.start();
  await t.writer.flush();
  assert.equal(await t.count(), 8);
  assert.equal(t.writer.stats().deadLettered, 1);
  assert.equal(t.writer.stats().failedBatches, 0, 'a data error is not an outage: no backoff');
});

test('stop() ends the loop when its blocking read ends, without reading again; flush() and start() refuse when not running', async () => {
  const t = await setup({ blockMs: 300 });
  const reads = { started: 0, open: 0 };
  const read = t.store.streamReadGroup.bind(t.store);
  t.store.streamReadGroup = async (...args) => {
    reads.started++;
    reads.open++;
    try {
      return await read(...args);
    } finally {
      reads.open--;
    }
  };
  await assert.rejects(t.writer.flush(), /not running|new/);
  await t.writer.start();
  await waitFor('the writer to block in its read of an empty stream', () => reads.open === 1);
  const startedBeforeStop = reads.started;
  await t.writer.stop();
  assert.equal(reads.open, 0, 'stop() waited for the read it was in (at most blockMs)');
  assert.equal(reads.started, startedBeforeStop, 'and started no other');
  await assert.rejects(t.writer.start(), /cannot start/);
  await assert.rejects(t.writer.flush(), /not running|stopped/);
});

test('under load batches fill: after a partial batch the writer waits fillMs, then takes what arrived in one transaction', async () => {
  const batches: number[] = [];
  // A fill wait far longer than the appends below can take, however busy the machine: flush() ends it.
  const t = await setup({ fillMs: 60_000, onBatch: async (_trx, records) => void batches.push(records.length) });
  await t.writer.start();
  await t.buffer.append(sampleRecord(1));
  await waitFor('the first batch', () => batches.length > 0);
  assert.deepEqual(batches, [1], 'the first record was written on its own');
  // These arrive while the writer waits after its one-record batch.
  for (let i = 2; i <= 40; i++) await t.buffer.append(sampleRecord(i));
  await t.writer.flush();
  assert.deepEqual(batches, [1, 39], 'the 39 that arrived during the wait went in one batch');
  assert.equal(await t.count(), 40, 'every record written');
});

test('lag is the time entries wait in the stream, not the age of the request; 0 once the stream is drained', async () => {
  const t = await setup({ blockMs: 100 });
  await t.writer.start();
  // A record of a request that arrived long ago (a long stream, say) appended just now.
  const record = sampleRecord(1);
  const appending = Date.now();
  await t.buffer.append(record);
  await t.writer.flush();
  const written = Date.now();
  const lag = t.writer.lagSeconds();
  // The stream id has whole milliseconds: allow one either side of the window seen here.
  assert.ok(
    lag >= 0 && lag * 1000 <= written - appending + 2,
    `lag ${lag} s lies within the append-to-commit window of ${written - appending} ms`,
  );
  assert.ok(lag < (written - Date.parse(record.timestamp)) / 1000, 'not the age of the request');
  await waitFor('an empty read', () => t.writer.lagSeconds() === 0);
});
