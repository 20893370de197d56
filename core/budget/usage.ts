import type { KeyRecord } from '../keys/record.js';
import type { Store } from '../store/types.js';
import { budgetWindow, resetsAt } from './periods.js';
import { reservedField } from './scripts.js';
import { liveBuckets } from './leases.js';

/**
 * Nano-USD per USD: money is counted in integer nano-dollars everywhere — store counters,
 * wallet mirrors, the ledger — the unit the audit log records costs in (9 decimals), so a
 * request's debit, its budget spend and its audited cost agree to the unit (issue 13 finding 10).
 */
export const nanoPerUsd = 1_000_000_000;

/**
 * USD → integer nano-USD, exactly as the audit log writes the amount (`toFixed(9)`), without
 * float multiplication. Exact below 2^53 nano-dollars (about 9 million USD).
 */
export function toNano(usd: number): number {
  const magnitude = Math.abs(usd);
  // Fast path (every request converts a few amounts, caps and balances of a million USD among
  // them): below 2^20 USD the product is below 2^50 nano-USD, so its float rounding error is at
  // most 1/16; when it is more than 0.4 from a half, the nearest integer is what toFixed(9) gives.
  if (magnitude < 1_048_576) {
    const product = magnitude * nanoPerUsd;
    const nearest = Math.round(product);
    if (Math.abs(product - nearest) < 0.4) return usd < 0 ? -nearest : nearest;
  }
  return exactToNano(usd);
}

/**
 * Whether a USD amount is a whole number of nano-USD as written: at most nine decimal places in
 * its shortest decimal form (what the client sent as JSON). Amounts with more would be stored
 * rounded, so input checks refuse them. Decided on the text, not by converting: above 2^53
 * nano-USD (~9 million USD) a conversion is itself rounded.
 */
export function isWholeNanoUsd(usd: number): boolean {
  return hasAtMostDecimals(usd, 9);
}

/** Whether `value` has at most `places` decimal places in its shortest decimal form (`1e-7` has 7). */
export function hasAtMostDecimals(value: number, places: number): boolean {
  const [mantissa = '', exponent = '0'] = String(value).split('e');
  const decimals = (mantissa.split('.')[1]?.length ?? 0) - Number(exponent);
  return decimals <= places;
}

/** toNano by the decimal string the audit log writes: exact for any amount, slower. */
function exactToNano(usd: number): number {
  const [whole = '0', fraction = ''] = Math.abs(usd).toFixed(9).split('.');
  const nano = Number(whole) * nanoPerUsd + Number(fraction.padEnd(9, '0'));
  return usd < 0 ? -nano : nano;
}

/** USD → integer nano-USD, rounding up so a reservation never undershoots a cost. */
export function toNanoCeil(usd: number): number {
  return Math.max(toNano(usd), Math.ceil(usd * nanoPerUsd - 1e-3));
}

/** A key's budget as the Management API and the operator report it. */
export interface BudgetUsage {
  /** Spend in the window, requests in flight included at their reserved worst case. */
  usedUsd: number;
  /** The part of usedUsd reserved by requests still in flight (0 when unknown). */
  reservedUsd: number;
  remainingUsd: number | null;
  resetsAt: Date | null;
  exhausted: boolean;
}

/**
 * A key without a budget spends nothing against one; when it still names a period, `resetsAt`
 * is that period's next reset (what a budget set now would reset at), otherwise null.
 */
function withoutBudget(key: KeyRecord, now: Date): BudgetUsage {
  const resets = key.budgetPeriod === null ? null : resetsAt(budgetWindow(key.id, key.budgetPeriod, now, key.budgetPeriodSince), new Map());
  return { usedUsd: 0, reservedUsd: 0, remainingUsd: null, resetsAt: resets, exhausted: false };
}

/**
 * Reads a key's spend in its current budget window from the store (reservations included).
 * When the store has no counter (nothing spent yet, or the store lost it), `fromAuditLog`
 * — when given — supplies the settled spend PostgreSQL knows, so a lost counter is not shown as 0.
 */
export async function readBudgetUsage(
  store: Store,
  key: KeyRecord,
  now: Date,
  fromAuditLog?: () => Promise<ReadonlyMap<number, number>>,
): Promise<BudgetUsage> {
  if (key.budgetLimitUsd === null) return withoutBudget(key, now);
  const window = budgetWindow(key.id, key.budgetPeriod ?? 'monthly', now, key.budgetPeriodSince);
  const raw = await store.hashGetAll(window.counterKey);
  // Reservations whose lease ended unsettled (their gateway died) are not spend: the next request
  // gives them back (leases.ts); the view does not wait for it.
  const live = liveBuckets(raw, now);
  let buckets = live.buckets;
  if (buckets.size === 0 && fromAuditLog) buckets = new Map(await fromAuditLog());
  let usedNano = 0;
  for (const [bucket, nano] of buckets) if (bucket >= window.minBucket) usedNano += nano;
  const reservedRaw = Number(raw[reservedField] ?? 0) - live.abandonedNano;
  const remainingNano = Math.max(0, toNano(key.budgetLimitUsd) - usedNano);
  return {
    usedUsd: usedNano / nanoPerUsd,
    // A rebuild knows only its own replica's reservations, and a settlement after it may take back
    // more than it wrote: never show less than nothing or more than the spend.
    reservedUsd: Math.min(Math.max(0, Number(reservedRaw ?? 0)), usedNano) / nanoPerUsd,
    remainingUsd: remainingNano / nanoPerUsd,
    resetsAt: resetsAt(window, buckets),
    exhausted: usedNano >= toNano(key.budgetLimitUsd),
  };
}

/** The usage of a key that has spent nothing in its current window (a key just created). */
export function unspentBudget(key: KeyRecord, now: Date): BudgetUsage {
  if (key.budgetLimitUsd === null) return withoutBudget(key, now);
  const window = budgetWindow(key.id, key.budgetPeriod ?? 'monthly', now, key.budgetPeriodSince);
  return {
    usedUsd: 0,
    reservedUsd: 0,
    remainingUsd: key.budgetLimitUsd,
    resetsAt: resetsAt(window, new Map()),
    exhausted: key.budgetLimitUsd <= 0,
  };
}

/** An amount in USD as a plain decimal, exact to the nano-dollar and never with an exponent: 4e-8 → `0.00000004`. */
export function exactUsdText(usd: number): string {
  return usd.toFixed(9).replace(/\.?0+$/, '') || '0';
}
