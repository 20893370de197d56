// The request log's pages against the audit log itself: scopes of a few keys are paged key by key
// and merged, scopes of many by the time index — either way every row of the scope once, newest
// first by (ts, request_id) with ties on ts, and nothing of another owner's keys.
import { expect, test } from 'vitest';
import { insertAuditBatch } from '../audit/insert.js';
import { cleanupStack, sampleRecord } from '../audit/testing.js';
import { createTestDatabase } from '../db/testing.js';
import { KeyRepository } from '../keys/index.js';
import { InvalidLogCursorError, listRequests, type RequestLogFilters } from './request-log.js';
import type { KeyScope } from './scope.js';

test('pages hold every row of the scope once, newest first, for a few keys and for many', async () => {
  const defer = cleanupStack();
  const db = defer(await createTestDatabase(), (d) => d.close());
  const knex = db.knex;
  const [owner, other, crowd] = (await knex('users')
    .insert([
      { email: `log-a-${Date.now()}@example.com`, display_name: 'A' },
      { email: `log-b-${Date.now()}@example.com`, display_name: 'B' },
      { email: `log-c-${Date.now()}@example.com`, display_name: 'C' },
    ])
    .returning('id')) as { id: number }[];
  const keys = new KeyRepository(knex, 'a-pepper-long-enough-for-the-repository');
  const make = async (ownerUserId: number, n: number) =>
    Promise.all(
      Array.from(
        { length: n },
        async (_, i) => (await keys.create({ kind: 'managed', name: `k${i}`, source: 'portal', ownerUserId })).record,
      ),
    );
  const mine = await make(owner!.id, 3);
  const theirs = await make(other!.id, 1);
  const many = await make(crowd!.id, 40); // past the per-key paging bound
  // Rows interleaved across keys, several sharing one timestamp (ties broken by request_id).
  const records = Array.from({ length: 90 }, (_, i) => {
    const key = i % 10 === 9 ? theirs[0]! : mine[i % 3]!;
    return sampleRecord(i, {
      keyId: key.id,
      timestamp: new Date(Date.UTC(2025, 2, 14, 9, 0, Math.floor(i / 4))).toISOString(),
      model: i % 2 ? 'm-odd' : 'm-even',
    });
  });
  const crowdRecords = Array.from({ length: 60 }, (_, i) =>
    sampleRecord(1000 + i, {
      keyId: many[i % many.length]!.id,
      timestamp: new Date(Date.UTC(2025, 2, 14, 9, 1, Math.floor(i / 3))).toISOString(),
    }),
  );
  await insertAuditBatch(knex, [...records, ...crowdRecords]);

  const expected = (keyIds: string[], model?: string) =>
    [...records, ...crowdRecords]
      .filter((r) => keyIds.includes(r.keyId!) && (model === undefined || r.model === model))
      .sort((a, b) => (a.timestamp === b.timestamp ? (a.requestId < b.requestId ? 1 : -1) : a.timestamp < b.timestamp ? 1 : -1))
      .map((r) => r.requestId);
  const paged = async (scope: KeyScope, filters: RequestLogFilters, limit: number) => {
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await listRequests(knex, scope, filters, { limit, ...(cursor && { cursor }) });
      expect(page.data.length).toBeLessThanOrEqual(limit);
      seen.push(...page.data.map((r) => r.gateway_request_id));
      cursor = page.next ?? undefined;
    } while (cursor);
    return seen;
  };

  // A few keys (paged key by key), with and without filters; the other owner's rows never appear.
  expect(await paged({ ownerUserId: owner!.id }, {}, 7)).toEqual(expected(mine.map((k) => k.id)));
  expect(await paged({ ownerUserId: owner!.id }, { model: 'm-odd' }, 5)).toEqual(
    expected(
      mine.map((k) => k.id),
      'm-odd',
    ),
  );
  expect(await paged({ ownerUserId: owner!.id }, { keyNumber: mine[1]!.number }, 4)).toEqual(expected([mine[1]!.id]));
  expect(await paged({ ownerUserId: owner!.id }, { keyNumber: theirs[0]!.number }, 4)).toEqual([]);
  // Many keys (the time index), the same contract.
  expect(await paged({ ownerUserId: crowd!.id }, {}, 9)).toEqual(expected(many.map((k) => k.id)));
  // A user without keys sees nothing.
  expect(await paged({ ownerUserId: -1 }, {}, 10)).toEqual([]);
  // Each entry names its key as the portal shows it.
  const first = (await listRequests(knex, { ownerUserId: owner!.id }, {}, { limit: 1 })).data[0]!;
  const key = mine.find((k) => k.id === records.find((r) => r.requestId === first.gateway_request_id)!.keyId)!;
  expect([first.key_id, first.key_name]).toEqual([key.number, key.name]);
});

test('a cursor whose date is not the exact form the log writes is refused, not rolled into another date', async () => {
  const defer = cleanupStack();
  const db = defer(await createTestDatabase(), (d) => d.close());
  const [user] = (await db
    .knex('users')
    .insert({ email: `log-cursor-${Date.now()}@example.com`, display_name: 'C' })
    .returning('id')) as {
    id: number;
  }[];
  for (const ts of ['1', '2026-02-30', '2026-02-30T00:00:00.000Z', '2026-01-01']) {
    const cursor = Buffer.from(JSON.stringify([ts, 'req_a'])).toString('base64url');
    await expect(listRequests(db.knex, { ownerUserId: user!.id }, {}, { limit: 5, cursor }), ts).rejects.toBeInstanceOf(
      InvalidLogCursorError,
    );
  }
  const written = Buffer.from(JSON.stringify(['2026-01-01T00:00:00.000Z', 'req_a'])).toString('base64url');
  expect((await listRequests(db.knex, { ownerUserId: user!.id }, {}, { limit: 5, cursor: written })).data).toEqual([]);
});
