import assert from 'node:assert/strict';
import { test } from 'vitest';
import { isCanonicalInstant, isRealDate, namesRealDay } from './calendar.js';

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

test('isCanonicalInstant takes only the toISOString form, read back to itself', () => {
  for (const written of ['2026-11-01T08:00:00.000Z', '0001-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999Z', new Date().toISOString()])
    assert.equal(isCanonicalInstant(written), true, written);
  for (const other of [
    '1',
    '2026-02-30',
    '2026-02-30T00:00:00.000Z',
    '2026-01-01',
    '2026-01-01T00:00:00Z',
    '2026-01-01T00:00:00.000+00:00',
    '0000-01-01T00:00:00.000Z',
    '-271821-04-20T00:00:00.000Z',
    '+275760-09-13T00:00:00.000Z',
    '2026-01-01T24:00:00.000Z',
    '',
  ])
    assert.equal(isCanonicalInstant(other), false, other);
});
