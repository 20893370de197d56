import type { BudgetPeriod } from '../keys/record.js';
import { shardTag } from '../store/shard-tags.js';

/** Length of the `rolling` budget window (the API leaves it open; docs/keys.md). */
export const rollingWindowDays = 30;
const dayMs = 86_400_000;

/**
 * Where a key's spend for the period containing `now` is counted, and when that period ends.
 * Counters are hashes of integer nano-USD per bucket, named `spend:` (an earlier release kept
 * micro-USD under `budget:`, left to expire: a missing counter is rebuilt from the audit log).
 * `daily` and `monthly` use one hash per calendar period (UTC) with one bucket; `rolling` uses one hash with a bucket per UTC day, of
 * which the last `rollingWindowDays` count.
 */
export interface BudgetWindow {
  /** Store key of the counter hash. */
  counterKey: string;
  /** Bucket (hash field) that new spend goes to. */
  bucket: number;
  /** Buckets below this no longer count (and are deleted when seen). */
  minBucket: number;
  /** How long the counter must live from now (past the window's end). */
  ttlMs: number;
  /** Exact end of the current period (daily/monthly); for rolling, computed from the buckets. */
  periodEnd: Date | undefined;
}

/** The calendar facts of one UTC day that every window computed on it shares. */
interface CalendarDay {
  day: number;
  dayTag: string;
  monthTag: string;
  monthEnd: number;
}

/**
 * The UTC day of `nowMs`, its date strings and its month's end. Every request computes its key's
 * (and its spend groups') windows; the last day is kept, as it changes once a day.
 */
let lastDay: CalendarDay | undefined;
function calendarDay(nowMs: number): CalendarDay {
  const day = Math.floor(nowMs / dayMs);
  if (lastDay?.day === day) return lastDay;
  const now = new Date(day * dayMs);
  lastDay = {
    day,
    dayTag: now.toISOString().slice(0, 10),
    monthTag: now.toISOString().slice(0, 7),
    monthEnd: Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1),
  };
  return lastDay;
}

/**
 * The budget window of `keyId` (or of a spend group, `org:5`) for `period` at `now`; its counter is
 * tagged with that id's shard. `periodSince`, when the key's period last changed, ends its name:
 * a counter left when the key took another period knows nothing of what it spent since, so
 * taking the period again must start from a counter rebuilt from the audit log, not that one.
 */
export function budgetWindow(keyId: string, period: BudgetPeriod, now: Date, periodSince?: string | null): BudgetWindow {
  const nowMs = now.getTime();
  const calendar = calendarDay(nowMs);
  const since = periodSince ? `:${Date.parse(periodSince).toString(36)}` : '';
  switch (period) {
    case 'daily': {
      const end = (calendar.day + 1) * dayMs;
      return {
        counterKey: `spend:${shardTag(keyId)}:d:${calendar.dayTag}${since}`,
        bucket: 0,
        minBucket: 0,
        ttlMs: end - nowMs + dayMs,
        periodEnd: new Date(end),
      };
    }
    case 'monthly':
      return {
        counterKey: `spend:${shardTag(keyId)}:m:${calendar.monthTag}${since}`,
        bucket: 0,
        minBucket: 0,
        ttlMs: calendar.monthEnd - nowMs + dayMs,
        periodEnd: new Date(calendar.monthEnd),
      };
    case 'rolling':
      return {
        counterKey: `spend:${shardTag(keyId)}:r${since}`,
        bucket: calendar.day,
        minBucket: calendar.day - rollingWindowDays + 1,
        ttlMs: (rollingWindowDays + 1) * dayMs,
        periodEnd: undefined,
      };
    default: {
      const unreachable: never = period;
      throw new Error(`unknown budget period ${String(unreachable)}`);
    }
  }
}

/**
 * When spend stops counting against the budget: the period's end for daily/monthly; for
 * rolling, when the oldest counted day leaves the window (with nothing counted, when today would).
 */
export function resetsAt(window: BudgetWindow, buckets: ReadonlyMap<number, number>): Date {
  if (window.periodEnd) return window.periodEnd;
  const counted = [...buckets.entries()].filter(([bucket, nano]) => bucket >= window.minBucket && nano > 0).map(([b]) => b);
  // Nothing counted yet: spend made now would stop counting when today leaves the window.
  const oldest = counted.length === 0 ? window.bucket : Math.min(...counted);
  return new Date((oldest + rollingWindowDays) * dayMs);
}
