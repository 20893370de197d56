import { test } from 'vitest';
import assert from 'node:assert/strict';
import { createTestDatabase } from '../db/testing.js';
import { insertAuditBatch } from './insert.js';
import type { AuditRecord } from './record.js';
import { AuditRepository, InvalidAuditCursorError, decodeAuditCursor, encodeAuditCursor } from './repository.js';
import { cleanupStack, sampleRecord } from './testing.js';

const base = Date.UTC(2025, 0, 30, 12, 0, 0);

/** 25 records of key_a over four days across a month boundary; every fifth shares its predecessor's timestamp. */
function keyA(): AuditRecord[] {
  return Array.from({ length: 25 }, (_, i) => {
    const step = i % 5 === 4 ? i - 1 : i; // ties: the keyset must fall back to request_id
    return sampleRecord(i, {
      timestamp: new Date(base + step * 4 * 3_600_000).toISOString(),
      costUsd: (i + 1) / 1e6,
      inputTokens: 100,
      outputTokens: i,
    });
  });
}

const newestFirst = (records: AuditRecord[]) =>
  [...records].sort((a, b) =>
    a.timestamp === b.timestamp ? b.requestId.localeCompare(a.requestId) : b.timestamp.localeCompare(a.timestamp),
  );

test('pages of 10 by cursor: newest first, no gaps, no duplicates, stable while new rows arrive', async () => {
  const defer = cleanupStack();
  const db = defer(await createTestDatabase(), (d) => d.close());
  const records = keyA();
  const others = Array.from({ length: 5 }, (_, i) => sampleRecord(100 + i, { keyId: 'key_b', timestamp: records[i]!.timestamp }));
  await insertAuditBatch(db.knex, [...others, ...records]);
  const repo = new AuditRepository(db.knex);

  const first = await repo.listForKey('key_a', { limit: 10 });
  assert.ok(first.nextCursor);
  // A request lands after page 1 was read: later pages neither repeat nor skip because of it.
  await insertAuditBatch(db.knex, [sampleRecord(999, { timestamp: new Date(base + 10 * 86_400_000).toISOString() })]);
  const second = await repo.listForKey('key_a', { limit: 10, cursor: first.nextCursor });
  assert.ok(second.nextCursor);
  const third = await repo.listForKey('key_a', { limit: 10, cursor: second.nextCursor });
  assert.deepEqual([first.data.length, second.data.length, third.data.length], [10, 10, 5]);
  assert.equal(third.nextCursor, null);
  assert.deepEqual([...first.data, ...second.data, ...third.data], newestFirst(records));

  const exact = await repo.listForKey('key_a', { limit: 26 });
  assert.equal(exact.data.length, 26);
  assert.equal(exact.nextCursor, null, 'no cursor when the page holds the last record');
  assert.deepEqual(await repo.listForKey('nobody', { limit: 10 }), { data: [], nextCursor: null });
});

test('from (inclusive) and to (exclusive) filters, combined with the cursor', async () => {
  const defer = cleanupStack();
  const db = defer(await createTestDatabase(), (d) => d.close());
  const records = keyA();
  await insertAuditBatch(db.knex, records);
  const repo = new AuditRepository(db.knex);
  const from = new Date(records[5]!.timestamp);
  const to = new Date(records[15]!.timestamp);
  const inRange = records.filter((r) => r.timestamp >= from.toISOString() && r.timestamp < to.toISOString());
  assert.equal(inRange.length, 10);

  const page1 = await repo.listForKey('key_a', { from, to, limit: 4 });
  const page2 = await repo.listForKey('key_a', { from, to, limit: 4, cursor: page1.nextCursor! });
  const page3 = await repo.listForKey('key_a', { from, to, limit: 4, cursor: page2.nextCursor! });
  assert.deepEqual([...page1.data, ...page2.data, ...page3.data], newestFirst(inRange));
  assert.equal(page3.nextCursor, null);
  assert.equal((await repo.listForKey('key_a', { from: to, to, limit: 10 })).data.length, 0, 'an empty range is empty');
  assert.equal((await repo.listForKey('key_a', { to: from, limit: 100 })).data.length, 5);
});

test('a malformed cursor or limit is rejected with an error the API can map to 400', async () => {
  const defer = cleanupStack();
  const db = defer(await createTestDatabase(), (d) => d.close());
  const repo = new AuditRepository(db.knex);
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  for (const cursor of [
    '',
    'not a cursor!',
    'AAAA',
    b64({ ts: 1 }),
    b64(['yesterday', 'req_1']),
    b64(['2025-01-01T00:00:00Z', 'req_1']),
    b64(['2025-01-01T00:00:00.000Z', '']),
  ]) {
    await assert.rejects(repo.listForKey('key_a', { limit: 10, cursor }), InvalidAuditCursorError, `cursor ${JSON.stringify(cursor)}`);
  }
  await assert.rejects(repo.listForKey('key_a', { limit: 0 }), RangeError);
  await assert.rejects(repo.listForKey('key_a', { limit: 1001 }), RangeError);
  const position = { ts: '2025-01-01T00:00:00.000Z', requestId: 'req_1' };
  assert.deepEqual(decodeAuditCursor(encodeAuditCursor(position)), position);
  assert.match(encodeAuditCursor(position), /^[A-Za-z0-9_-]+$/, 'url-safe');
});

test('totals of a key over [from, to): requests, tokens and cost to the micro-dollar', async () => {
  const defer = cleanupStack();
  const db = defer(await createTestDatabase(), (d) => d.close());
  const records = keyA();
  await insertAuditBatch(db.knex, [...records, sampleRecord(500, { keyId: 'key_b', costUsd: 5 })]);
  const repo = new AuditRepository(db.knex);
  const all = await repo.totalsForKey('key_a', new Date(base), new Date(base + 30 * 86_400_000));
  assert.deepEqual(all, { requests: 25, inputTokens: 2500, outputTokens: 300, costUsd: 0.000325 });
  const firstTen = await repo.totalsForKey('key_a', new Date(base), new Date(records[10]!.timestamp));
  assert.deepEqual(firstTen, { requests: 10, inputTokens: 1000, outputTokens: 45, costUsd: 0.000055 });
  assert.deepEqual(await repo.totalsForKey('nobody', new Date(0), new Date()), {
    requests: 0,
    inputTokens: 0,
    outputTokens: 0,
    costUsd: 0,
  });
});
