// When a schedule's wall-clock time falls in a daylight-saving change: a time the clocks skip
// (spring forward) runs at that time shifted forward by the gap, the first instant after it, in
// every zone east or west of UTC; a time the clocks show twice (fall back) runs once, at the first.
import { describe, expect, it } from 'vitest';
import { nextRunAfter } from './schedules.js';

const daily = (timeOfDay: string, timeZone: string) => ({ cadence: 'daily' as const, timeOfDay, timeZone });
const next = (spec: ReturnType<typeof daily>, after: string) => nextRunAfter(spec, new Date(after)).toISOString();

describe('a schedule time the clocks skip (spring forward)', () => {
  it('runs at the same wall-clock time shifted forward by the gap, east of UTC (Paris: 02:30 → 03:30 CEST)', () => {
    expect(next(daily('02:30', 'Europe/Paris'), '2027-03-27T12:00:00Z')).toBe('2027-03-28T01:30:00.000Z');
  });

  it('west of UTC too (New York: 02:30 → 03:30 EDT, not 01:30 EST an hour early)', () => {
    expect(next(daily('02:30', 'America/New_York'), '2027-03-13T12:00:00Z')).toBe('2027-03-14T07:30:00.000Z');
  });

  it('a gap at midnight runs on its own day (Santiago: 00:30 on 5 September → 01:30 that day), one run a day', () => {
    const santiago = daily('00:30', 'America/Santiago');
    expect(next(santiago, '2027-09-03T12:00:00Z')).toBe('2027-09-04T04:30:00.000Z');
    expect(next(santiago, '2027-09-04T12:00:00Z')).toBe('2027-09-05T04:30:00.000Z');
    expect(next(santiago, '2027-09-05T12:00:00Z')).toBe('2027-09-06T03:30:00.000Z');
  });

  it('a 30-minute change (Lord Howe: 02:15 → 02:45 +11)', () => {
    expect(next(daily('02:15', 'Australia/Lord_Howe'), '2027-10-02T12:00:00Z')).toBe('2027-10-02T15:45:00.000Z');
  });

  it('a zone without daylight saving is its fixed offset (Tokyo)', () => {
    expect(next(daily('02:30', 'Asia/Tokyo'), '2027-03-13T00:00:00Z')).toBe('2027-03-13T17:30:00.000Z');
  });
});

describe('a schedule time the clocks show twice (fall back)', () => {
  it('runs once, at the first of the two, north (Paris, 31 October)', () => {
    const paris = daily('02:30', 'Europe/Paris');
    expect(next(paris, '2027-10-30T12:00:00Z')).toBe('2027-10-31T00:30:00.000Z');
    expect(next(paris, '2027-10-31T00:30:00Z')).toBe('2027-11-01T01:30:00.000Z');
  });

  it('and south (Sydney, 4 April)', () => {
    const sydney = daily('02:30', 'Australia/Sydney');
    expect(next(sydney, '2027-04-03T00:00:00Z')).toBe('2027-04-03T15:30:00.000Z');
    expect(next(sydney, '2027-04-03T15:30:00Z')).toBe('2027-04-04T16:30:00.000Z');
  });
});
