import type { KeyRecord } from '../keys/record.js';
import type { Store } from '../store/types.js';
import { budgetWindow, resetsAt } from './periods.js';

/** Micro-USD per USD: money in the store is integer micro-dollars. */
export const microPerUsd = 1_000_000;

/** USD → integer micro-USD, rounding up so a reservation never undershoots a cost. */
export function toMicroCeil(usd: number): number {
  return Math.ceil(usd * microPerUsd - 1e-6);
}

/** USD → integer micro-USD, nearest (for settled costs). */
export function toMicro(usd: number): number {
  return Math.round(usd * microPerUsd);
}

/** A key's budget as the Management API and the operator report it. */
export interface BudgetUsage {
  usedUsd: number;
  remainingUsd: number | null;
  resetsAt: Date | null;
  exhausted: boolean;
}

/**
 * Reads a key's spend in its current budget window from the store (reservations included).
 * When the store has no counter (nothing spent yet, or the store lost it), `fromAuditLog`
 * — when given — supplies the settled spend PostgreSQL knows, so a lost counter is not shown as 0.
 */
export async function readBudgetUsage(store: Store, key: KeyRecord, now: Date, fromAuditLog?: () => Promise<ReadonlyMap<number, number>>): Promise<BudgetUsage> {
  if (key.budgetLimitUsd === null) return { usedUsd: 0, remainingUsd: null, resetsAt: null, exhausted: false };
  const window = budgetWindow(key.id, key.budgetPeriod ?? 'monthly', now);
  const raw = await store.hashGetAll(window.counterKey);
  let buckets = new Map(Object.entries(raw).map(([bucket, micro]) => [Number(bucket), Number(micro)]));
  if (buckets.size === 0 && fromAuditLog) buckets = new Map(await fromAuditLog());
  let usedMicro = 0;
  for (const [bucket, micro] of buckets) if (bucket >= window.minBucket) usedMicro += micro;
  const usedUsd = usedMicro / microPerUsd;
  const remaining = Math.max(0, key.budgetLimitUsd - usedUsd);
  return {
    usedUsd,
    remainingUsd: Math.round(remaining * microPerUsd) / microPerUsd,
    resetsAt: resetsAt(window, buckets),
    exhausted: toMicro(usedUsd) >= toMicro(key.budgetLimitUsd),
  };
}

/** The usage of a key that has spent nothing in its current window (a key just created). */
export function unspentBudget(key: KeyRecord, now: Date): BudgetUsage {
  if (key.budgetLimitUsd === null) return { usedUsd: 0, remainingUsd: null, resetsAt: null, exhausted: false };
  const window = budgetWindow(key.id, key.budgetPeriod ?? 'monthly', now);
  return { usedUsd: 0, remainingUsd: key.budgetLimitUsd, resetsAt: resetsAt(window, new Map()), exhausted: key.budgetLimitUsd <= 0 };
}
