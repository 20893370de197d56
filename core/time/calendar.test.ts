import assert from 'node:assert/strict';
import { test } from 'vitest';
import { isRealDate, namesRealDay } from './calendar.js';

test('namesRealDay refuses days a month does not have, leap years included', () => {
  for (const real of ['2026-02-28', '2024-02-29', '2000-02-29', '2026-04-30', '2026-12-31T23:59:59Z', '0001-01-01', 'not a date'])
    assert.equal(namesRealDay(real), true, real);
  for (const impossible of [
    '2026-02-29',
    '2026-02-30',
    '2026-02-31T10:00:00Z',
    '1900-02-29',
    '2026-04-31',
    '2026-13-01',
    '2026-00-10',
    '2026-01-00',
  ])
    assert.equal(namesRealDay(impossible), false, impossible);
});

test('isRealDate: a date JavaScript reads whose day exists', () => {
  for (const real of ['2026-02-28', '2026-02-28T10:00:00Z']) assert.equal(isRealDate(real), true, real);
  for (const not of ['2026-02-30', 'yesterday', '2026-13-01']) assert.equal(isRealDate(not), false, not);
});
