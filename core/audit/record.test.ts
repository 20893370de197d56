import { test } from 'vitest';
import assert from 'node:assert/strict';
import { AuditRecordError, parseAuditRecord, serialiseAuditRecord } from './record.js';
import { sampleRecord } from './testing.js';

test('a record survives serialise → parse unchanged', () => {
  const record = sampleRecord(3, {
    attempts: [
      { supplier: 's', region: 'eu', startedAt: 1, latencyMs: 2, outcome: 'failed', status: 502, code: 'upstream_error', selectionMs: 0.5 },
    ],
  });
  assert.deepEqual(parseAuditRecord(serialiseAuditRecord(record)), record);
});

test('fields a gateway of another version may leave out get defaults; numbers are normalised', () => {
  const parsed = parseAuditRecord(
    JSON.stringify({
      requestId: 'r',
      timestamp: '2025-03-01T10:00:00+01:00',
      keyId: 'k',
      interface: 'messages',
      status: 200,
      latencyMs: 12.6,
      costUsd: 0.1 + 0.2,
      extra: true,
    }),
  );
  assert.deepEqual(parsed, {
    requestId: 'r',
    timestamp: '2025-03-01T09:00:00.000Z',
    keyId: 'k',
    payerId: null,
    interface: 'messages',
    model: null,
    supplier: null,
    region: null,
    inputTokens: 0,
    outputTokens: 0,
    cachedInputTokens: 0,
    cacheWriteInputTokens: 0,
    costUsd: 0.3,
    latencyMs: 13,
    status: 200,
    code: null,
    failover: false,
    attempts: [],
    session: null,
  });
});

test('entries PostgreSQL could not take are refused up front (they become dead letters, not a stuck batch)', () => {
  const good = sampleRecord(1);
  const bad: unknown[] = [
    '{',
    '[]',
    { ...good, requestId: '' },
    { ...good, keyId: 7 },
    { ...good, timestamp: 'yesterday' },
    { ...good, inputTokens: -1 },
    { ...good, outputTokens: 3e9 },
    { ...good, costUsd: Number.POSITIVE_INFINITY },
    { ...good, attempts: [{ supplier: 's' }] },
    { ...good, attempts: 'none' },
  ];
  for (const entry of bad) {
    assert.throws(
      () => parseAuditRecord(typeof entry === 'string' ? entry : JSON.stringify(entry)),
      AuditRecordError,
      JSON.stringify(entry),
    );
  }
  assert.equal(parseAuditRecord(JSON.stringify({ ...good, session: 'a\u0000b' })).session, 'ab');
});
