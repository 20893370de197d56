import { test } from 'vitest';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { Knex } from 'knex';
import { createTestDatabase } from '../db/testing.js';
import { RedisStore } from '../store/redis-store.js';
import { createTestStore } from '../store/testing.js';
import { AuditBuffer } from './buffer.js';
import { insertAuditBatch } from './insert.js';
import { cleanupStack, connectionUrl, memoryLogger, proxiedKnex, sampleRecord, waitFor } from './testing.js';
import { AuditWriter } from './writer.js';

const fast = { blockMs: 100, retryBackoffMs: { min: 20, max: 200 } };

async function ids(knex: Knex): Promise<string[]> {
  return (await knex('audit_log').orderBy('request_id').select<{ request_id: string }[]>('request_id')).map((r) => r.request_id);
}

const expected = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => sampleRecord(from + i).requestId);
const pending = async (store: { streamGroupInfo(s: string, g: string): Promise<{ pending: number }> }) =>
  (await store.streamGroupInfo('audit', 'audit-writers')).pending;

test('PostgreSQL unreachable for a while: nothing is acked meanwhile, every record arrives afterwards', async () => {
  const defer = cleanupStack();
  const db = defer(await createTestDatabase(), (d) => d.close());
  const store = defer(createTestStore(), (s) => s.close());
  const { proxy, knex } = await proxiedKnex(db.knex);
  defer(proxy, (p) => p.close());
  defer(knex, (k) => k.destroy());
  const logger = memoryLogger();
  const writer = defer(new AuditWriter(store, knex, { consumer: 'writer-1', logger, ...fast }), (w) => w.stop());
  const buffer = new AuditBuffer(store);

  await writer.start();
  for (let i = 0; i < 50; i++) await buffer.append(sampleRecord(i));
  await writer.flush();
  assert.equal((await ids(db.knex)).length, 50);

  proxy.disable();
  for (let i = 50; i < 150; i++) await buffer.append(sampleRecord(i));
  await waitFor('the writer to fail a few times', () => writer.stats().failedBatches >= 3);
  // The outage goes on: three more retries fail, and still nothing is written or acked.
  const failed = writer.stats().failedBatches;
  await waitFor('three more failed retries', () => writer.stats().failedBatches >= failed + 3);
  assert.equal((await ids(db.knex)).length, 50, 'nothing new reached the table during the outage');
  const during = await store.streamGroupInfo('audit', 'audit-writers');
  assert.ok(during.length >= 100 && during.pending >= 1, `entries stay in the stream, unacked: ${JSON.stringify(during)}`);
  assert.ok(logger.lines.some((l) => l.msg.includes('not written; retrying')));

  proxy.enable();
  await writer.flush();
  assert.deepEqual(await ids(db.knex), expected(0, 150));
  assert.equal(writer.stats().written, 150);
  assert.deepEqual(await store.streamGroupInfo('audit', 'audit-writers'), { length: 0, pending: 0 });
});

test('stop() during an outage returns at once; another writer takes the unacked entries over', async () => {
  const defer = cleanupStack();
  const db = defer(await createTestDatabase(), (d) => d.close());
  const store = defer(createTestStore(), (s) => s.close());
  const { proxy, knex } = await proxiedKnex(db.knex);
  defer(proxy, (p) => p.close());
  defer(knex, (k) => k.destroy());
  // A retry backoff of 10..20 s: stop() must cut it short instead of waiting it out.
  const slowRetry = { min: 20_000, max: 20_000 };
  const first = defer(
    new AuditWriter(store, knex, { consumer: 'writer-1', logger: memoryLogger(), ...fast, retryBackoffMs: slowRetry }),
    (w) => w.stop(),
  );
  const second = defer(new AuditWriter(store, db.knex, { consumer: 'writer-2', logger: memoryLogger(), claimIdleMs: 300, ...fast }), (w) =>
    w.stop(),
  );
  const buffer = new AuditBuffer(store);

  proxy.disable();
  for (let i = 0; i < 20; i++) await buffer.append(sampleRecord(i));
  await first.start();
  await waitFor('the first writer to hold the batch and fail', () => first.stats().failedBatches >= 1);
  let retryDue: NodeJS.Timeout | undefined;
  const firstRetry = new Promise<'the retry was due'>(
    (resolve) => (retryDue = setTimeout(() => resolve('the retry was due'), slowRetry.min / 2)),
  );
  defer(retryDue, (timer) => Promise.resolve(clearTimeout(timer)));
  assert.equal(await Promise.race([first.stop().then(() => 'stopped' as const), firstRetry]), 'stopped', 'stop() ends the backoff wait');
  assert.equal(first.stats().failedBatches, 1, 'no retry after stop()');
  assert.equal(await pending(store), 20, 'left pending, not acked');

  await second.start();
  await waitFor('the takeover', async () => (await ids(db.knex)).length === 20);
  assert.deepEqual(await ids(db.knex), expected(0, 20));
  await waitFor('the acks', async () => (await pending(store)) === 0);
});

test('entries a dead consumer read (some already committed) are taken over after claimIdleMs, without duplicates', async () => {
  const defer = cleanupStack();
  const db = defer(await createTestDatabase(), (d) => d.close());
  const store = defer(createTestStore(), (s) => s.close());
  const buffer = new AuditBuffer(store);
  const debited: string[] = [];
  const onBatch = async (_trx: Knex.Transaction, records: { requestId: string }[]) => void debited.push(...records.map((r) => r.requestId));
  // Two writers in turn: one whose claimIdleMs the held entries cannot reach during the test, then one whose they soon do.
  const patient = defer(
    new AuditWriter(store, db.knex, { consumer: 'writer-2', logger: memoryLogger(), claimIdleMs: 600_000, onBatch, ...fast }),
    (w) => w.stop(),
  );
  const eager = defer(
    new AuditWriter(store, db.knex, { consumer: 'writer-3', logger: memoryLogger(), claimIdleMs: 200, onBatch, ...fast }),
    (w) => w.stop(),
  );

  await store.streamCreateGroup('audit', 'audit-writers');
  for (let i = 0; i < 30; i++) await buffer.append(sampleRecord(i));
  // What a writer that died leaves behind: 30 entries read, the first 10 committed, none acked.
  const held = await store.streamReadGroup('audit', 'audit-writers', 'writer-dead', { count: 30, blockMs: 100 });
  assert.equal(held.length, 30);
  await insertAuditBatch(
    db.knex,
    Array.from({ length: 10 }, (_, i) => sampleRecord(i)),
  );
  for (let i = 30; i < 35; i++) await buffer.append(sampleRecord(i));

  await patient.start(); // it looks for abandoned entries on its first step
  await patient.flush(); // the new entries need no takeover
  assert.deepEqual(await ids(db.knex), [...expected(0, 10), ...expected(30, 35)]);
  assert.equal(await pending(store), 30, 'entries idle for less than claimIdleMs are left to their consumer');
  await patient.stop();

  await eager.start();
  await waitFor('the takeover', async () => (await ids(db.knex)).length === 35);
  assert.deepEqual(await ids(db.knex), expected(0, 35));
  assert.deepEqual(debited.sort(), expected(10, 35), 'onBatch ran once per record: not for the 10 already committed');
  await waitFor('the acks', async () => (await pending(store)) === 0);
  assert.equal(eager.stats().duplicates, 10);
});

// A real crash needs a second process sharing the stream, which the in-process store cannot be.
test(
  'a writer process SIGKILLed mid-batch: its records are written by the survivor',
  { skip: !process.env.REDIS_URL /* needs a store another process can share */ },
  async () => {
    const defer = cleanupStack();
    const redisUrl = process.env.REDIS_URL ?? '';
    const db = defer(await createTestDatabase(), (d) => d.close());
    const prefix = `svc-test:${randomBytes(6).toString('hex')}:`;
    const store = defer(new RedisStore(redisUrl, prefix), async (s) => {
      await s.del('audit', 'audit:dead');
      await s.close();
    });
    const survivor = defer(
      new AuditWriter(store, db.knex, { consumer: 'survivor', logger: memoryLogger(), claimIdleMs: 500, ...fast }),
      (w) => w.stop(),
    );
    const buffer = new AuditBuffer(store);
    await store.streamCreateGroup('audit', 'audit-writers');
    for (let i = 0; i < 40; i++) await buffer.append(sampleRecord(i));

    const fixture = fileURLToPath(new URL('./writer-process.fixture.ts', import.meta.url));
    const child = spawn(process.execPath, ['--import', 'tsx', fixture], {
      env: { ...process.env, AUDIT_REDIS_URL: redisUrl, AUDIT_PREFIX: prefix, AUDIT_DATABASE_URL: connectionUrl(db.knex) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    defer(child, async (c) => c.kill('SIGKILL'));
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('in-batch') && resolve());
      child.on('exit', (code) => reject(new Error(`fixture exited early with ${code}`)));
    });
    child.kill('SIGKILL'); // inside its transaction: rows inserted, nothing committed or acked
    assert.equal(await pending(store), 40);

    await survivor.start();
    await waitFor('the survivor to write the dead writer’s batch', async () => (await ids(db.knex)).length === 40);
    assert.deepEqual(await ids(db.knex), expected(0, 40));
    await waitFor('the acks', async () => (await pending(store)) === 0);
  },
);
