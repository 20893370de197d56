// The audit writer in a worker thread (SVC_AUDIT_WRITER=thread): records appended on the serving
// thread reach PostgreSQL with their wallet debits through the thread's own connections, the
// serving thread is told which are committed (the journal's confirmations), flush() waits for
// what was appended before it, and stop() ends the thread. Needs the shared Redis and PostgreSQL
// a thread can reach, so it runs on the real services only.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, test } from 'vitest';
import { AuditBuffer } from '../../../core/audit/index.js';
import { cleanupStack, sampleRecord, waitFor } from '../../../core/audit/testing.js';
import { parseSettings } from '../../../core/config/index.js';
import { createTestDatabase } from '../../../core/db/testing.js';
import { deleteKeysWithPrefix } from '../../../core/store/testing.js';
import { RedisStore } from '../../../core/store/index.js';
import { AuditWriterThread, threadModule } from './writer-thread.js';

const shared = Boolean(process.env.DATABASE_URL && process.env.REDIS_URL);

describe.skipIf(!shared)('audit writer thread (real PostgreSQL and Redis)', () => {
  test('appended records are written with their debits, confirmed back, flushed and the thread stopped', async () => {
    const defer = cleanupStack();
    const db = defer(await createTestDatabase(), (d) => d.close());
    const prefix = `svc-test:${randomBytes(6).toString('hex')}:`;
    const redisUrl = process.env.REDIS_URL!;
    defer(prefix, (p) => deleteKeysWithPrefix(redisUrl, p));
    const store = defer(new RedisStore(redisUrl, prefix), (s) => s.close());
    const settings = parseSettings({
      DATABASE_URL: db.url,
      REDIS_URL: redisUrl,
      SVC_STORE_PREFIX: prefix,
      SVC_KEY_PEPPER: randomBytes(32).toString('hex'),
      SVC_ADMIN_KEY: `svc-admin-${randomBytes(24).toString('hex')}`,
      SVC_CATALOG: '(in memory)',
      LOG_LEVEL: 'silent',
    });
    const confirmed = new Set<string>();
    const thread = await AuditWriterThread.start(settings, {
      consumer: 'thread-test',
      logger: pino({ level: 'silent' }),
      onWritten: (ids) => ids.forEach((id) => confirmed.add(id)),
    });
    let stopped = false;
    defer(thread, async (t) => (stopped ? undefined : t.stop()));

    const buffer = new AuditBuffer(store);
    const records = Array.from({ length: 50 }, (_, i) => sampleRecord(i, { payerId: 'org_thread' }));
    await Promise.all(records.map((r) => buffer.append(r)));
    await waitFor('every record confirmed by the thread', () => confirmed.size === records.length);

    const rows = await db
      .knex('audit_log')
      .whereIn(
        'request_id',
        records.map((r) => r.requestId),
      )
      .count<{ n: string }[]>('* as n');
    assert.equal(Number(rows[0]!.n), records.length, 'one audit row per record');
    const debits = await db.knex('wallet_entries').where({ payer_id: 'org_thread', kind: 'debit' }).count<{ n: string }[]>('* as n');
    assert.equal(Number(debits[0]!.n), records.length, 'one wallet debit per record, in the same transactions');

    // flush() resolves only once what was appended before it is committed.
    const late = sampleRecord(1000, { payerId: null });
    await buffer.append(late);
    await thread.flush();
    assert.ok(confirmed.has(late.requestId), 'the record appended before flush() is confirmed when it resolves');
    assert.equal(await thread.backlog(), 0, 'nothing left in the stream');
    assert.ok(thread.lagSeconds() >= 0);

    await thread.stop();
    stopped = true;
    await assert.rejects(thread.flush(), /exited|stopped/, 'a stopped thread takes no more calls');
  });

  test('a thread that cannot reach its database fails to start with the reason', async () => {
    const settings = parseSettings({
      DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none',
      REDIS_URL: process.env.REDIS_URL!,
      SVC_STORE_PREFIX: `svc-test:${randomBytes(6).toString('hex')}:`,
      SVC_KEY_PEPPER: randomBytes(32).toString('hex'),
      SVC_ADMIN_KEY: `svc-admin-${randomBytes(24).toString('hex')}`,
      SVC_CATALOG: '(in memory)',
      LOG_LEVEL: 'silent',
    });
    await assert.rejects(
      AuditWriterThread.start(settings, { consumer: 'x', logger: pino({ level: 'silent' }), onWritten: () => undefined }),
      /audit writer thread could not start: .*(ECONNREFUSED|connect)/,
    );
  });
});

// The serving thread's side of the protocol, over a stand-in thread (writer-thread.fixture.ts):
// no services needed, so it runs on the embedded defaults too.
describe('audit writer thread host (stand-in thread)', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-thread-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
  const settings = parseSettings({
    SVC_KEY_PEPPER: 'p'.repeat(40),
    SVC_ADMIN_KEY: `svc-admin-${'a'.repeat(40)}`,
    SVC_CATALOG: '(in memory)',
    SVC_DATA_DIR: dataDir,
    LOG_LEVEL: 'silent',
  });
  const start = (consumer: string, onWritten: (ids: string[]) => void = () => undefined) =>
    AuditWriterThread.start(settings, {
      consumer,
      logger: pino({ level: 'silent' }),
      onWritten,
      module: threadModule('writer-thread.fixture'),
    });

  test('calls are answered, written ids and lag reach the serving thread, and a stopped thread takes no calls', async () => {
    const written: string[] = [];
    const thread = await start('steady', (ids) => written.push(...ids));
    await thread.flush();
    assert.equal(await thread.backlog(), 7);
    await waitFor('the written ids and the lag', () => written.includes('req_fixture') && thread.lagSeconds() === 1.5);
    await thread.stop();
    await thread.stop(); // a second stop is a no-op
    await assert.rejects(thread.backlog(), /stopped/);
  });

  test('a thread that cannot start rejects with its reason', async () => {
    await assert.rejects(start('fail'), /audit writer thread could not start: connect ECONNREFUSED/);
  });

  test('a thread that dies fails the calls in flight, is started again and answers again', async () => {
    const thread = await start('crash-on-flush');
    await assert.rejects(thread.flush(), /exited \(3\)/);
    await assert.rejects(thread.backlog(), /restarting/);
    await waitFor('the thread started again', async () => (await thread.backlog().catch(() => -1)) === 7);
    await thread.stop();
  });

  test('a restart that fails is tried again, until the thread runs', async () => {
    const thread = await start('flaky-restart');
    await assert.rejects(thread.flush(), /exited \(3\)/);
    // Start 2 fails; start 3, after the doubled delay, runs.
    await waitFor('the thread running again after a failed restart', async () => (await thread.backlog().catch(() => -1)) === 7);
    assert.equal(readFileSync(join(dataDir, 'fixture-starts'), 'utf8').length, 3, 'three starts: the first, a failed one, a good one');
    await thread.stop();
  });
});
