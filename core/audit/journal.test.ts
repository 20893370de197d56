import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Knex } from 'knex';
import { test } from 'vitest';
import type { AuditBuffer } from './buffer.js';
import { AuditJournal } from './journal.js';
import { createTestDatabase } from '../db/testing.js';
import { parseAuditRecord, serialiseAuditRecord } from './record.js';
import { cleanupStack, memoryLogger, sampleRecord } from './testing.js';

test('at start a journal adopts the spill files of exited processes, never those a live sibling is still writing', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-spill-'));
  try {
    // A pid that is running (this process's parent) and one that is not (beyond pid_max's default).
    const live = join(dir, `audit-spill-${process.ppid}-aaaa.jsonl`);
    writeFileSync(live, `${serialiseAuditRecord(sampleRecord(1))}\n{"requestId":"req_half-writ`);
    writeFileSync(join(dir, 'audit-spill-4194999-bbbb.jsonl'), `${serialiseAuditRecord(sampleRecord(2))}\n`);
    const journal = new AuditJournal({} as AuditBuffer, {} as Knex, { spillDir: dir, logger: memoryLogger(), checkEveryMs: 60_000 });
    await journal.start();
    try {
      assert.deepEqual(
        journal.unconfirmed().map((r) => r.requestId),
        [sampleRecord(2).requestId],
        "the exited process's record is adopted",
      );
      assert.ok(readFileSync(live, 'utf8').includes('req_half-writ'), "the live sibling's file is left as it is");
      assert.ok(!readdirSync(dir).some((f) => f.includes('4194999')), 'the adopted file is gone (its record is in this journal now)');
    } finally {
      await journal.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a pending record the stream reader would refuse (negative latency after a clock step) is still written by the check, and rebuilds still read its spend', async () => {
  const defer = cleanupStack();
  const db = defer(await createTestDatabase(), (d) => d.close());
  const dir = mkdtempSync(join(tmpdir(), 'svc-spill-'));
  defer(dir, async (d) => rmSync(d, { recursive: true, force: true }));
  // The stream "accepts" every record and then loses it (a store restarted empty).
  const buffer = { appendSerialised: async () => '1-0' } as unknown as AuditBuffer;
  const journal = new AuditJournal(buffer, db.knex, { spillDir: dir, logger: memoryLogger(), checkEveryMs: 60_000 });
  await journal.start();
  defer(journal, (j) => j.stop());
  const odd = sampleRecord(7, { keyId: 'key_odd', latencyMs: -3, costUsd: 0.000123 });
  assert.throws(() => parseAuditRecord(serialiseAuditRecord(odd)), 'the writer would dead-letter it');
  await journal.append(odd);
  assert.deepEqual(journal.unconfirmed(), [
    { requestId: odd.requestId, keyId: 'key_odd', payerId: odd.payerId, timestamp: odd.timestamp, costUsd: 0.000123 },
  ]);
  await journal.check({ all: true });
  assert.deepEqual(journal.unconfirmed(), [], 'written and confirmed');
  const [row] = (await db.knex('audit_log').where({ request_id: odd.requestId })) as { latency_ms: number; cost_usd: string }[];
  assert.equal(row?.latency_ms, -3);
  assert.equal(row?.cost_usd, '0.000123000');
});
