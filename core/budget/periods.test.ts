import { test } from 'vitest';
import assert from 'node:assert/strict';
import { budgetWindow, resetsAt } from './periods.js';

test('daily and monthly windows reset on UTC calendar boundaries', () => {
  const now = new Date('2026-11-30T23:59:59.500Z');
  const daily = budgetWindow('k1', 'daily', now);
  assert.equal(daily.counterKey, 'spend:{k1}:d:2026-11-30');
  assert.equal(resetsAt(daily, new Map())?.toISOString(), '2026-12-01T00:00:00.000Z');
  const nextDay = budgetWindow('k1', 'daily', new Date('2026-12-01T00:00:00.000Z'));
  assert.equal(nextDay.counterKey, 'spend:{k1}:d:2026-12-01');
  const monthly = budgetWindow('k1', 'monthly', now);
  assert.equal(monthly.counterKey, 'spend:{k1}:m:2026-11');
  assert.equal(resetsAt(monthly, new Map())?.toISOString(), '2026-12-01T00:00:00.000Z');
  assert.equal(budgetWindow('k1', 'monthly', new Date('2026-12-31T12:00:00Z')).periodEnd?.toISOString(), '2027-01-01T00:00:00.000Z');
  assert.ok(daily.ttlMs > 500 && daily.ttlMs <= 86_400_000 + 1_000);
});

test('rolling: 30 UTC-day buckets; resets_at is when the oldest counted day leaves the window', () => {
  const now = new Date('2026-11-22T10:00:00Z');
  const rolling = budgetWindow('k1', 'rolling', now);
  const today = Math.floor(now.getTime() / 86_400_000);
  assert.equal(rolling.bucket, today);
  assert.equal(rolling.minBucket, today - 29);
  // Before any spend: when spend made today would leave the window (never null while a period exists).
  assert.equal(resetsAt(rolling, new Map()).toISOString(), new Date((today + 30) * 86_400_000).toISOString());
  assert.equal(resetsAt(rolling, new Map([[today - 35, 9]])).toISOString(), new Date((today + 30) * 86_400_000).toISOString());
  const spent = new Map([
    [today - 40, 5], // outside: ignored
    [today - 3, 7],
    [today, 1],
  ]);
  assert.equal(resetsAt(rolling, spent)?.toISOString(), new Date((today - 3 + 30) * 86_400_000).toISOString());
});
