// A key as the dashboard shows it (HTML and JSON alike): the Management API's fields, with the
// portal's integer id, the owner and whether the page may change it. Never the secret or its hash.
import type { Knex } from 'knex';
import { readBudgetUsage, spendFromAuditLog, unspentBudget } from '../../../../core/budget/index.js';
import type { KeyRecord } from '../../../../core/keys/index.js';
import type { Store } from '../../../../core/store/index.js';
import { spendThisMonth } from '../../../../core/usage/index.js';

/** The dashboard's view of one key. */
export interface KeyPresentation {
  key_id: number;
  gateway_key_id: string;
  name: string;
  status: string;
  key_hint: string;
  allowed_models: string[] | null;
  allowed_regions: string[] | null;
  budget_limit: number | null;
  budget_period: string | null;
  /** Spend in the current window; null when the store could not be read (shown as unknown, never as 0). */
  budget_used: number | null;
  budget_remaining: number | null;
  /** Worst cases reserved by requests in flight (part of budget_used until they settle). */
  budget_reserved: number | null;
  /**
   * Spend since the start of the UTC month, whatever the budget (the hourly rollup, written with
   * the audit rows); null when it could not be read. A key without a budget shows it as its spend.
   */
  spent_this_month_usd: number | null;
  resets_at: string | null;
  rate_limit_rpm: number | null;
  source: string;
  owner_user_id: number | null;
  /** The wallet the gateway debits for this key (`user:<id>`, `project:<name>`), null when none. */
  payer_id: string | null;
  /** Kubernetes owns it: shown, never changed here. */
  read_only: boolean;
  created: string;
  updated: string;
}

/** Each key's spend this month, for presenting a page of keys with one query; null when it could not be read. */
export function monthSpendOf(database: Knex, keys: readonly KeyRecord[], now: Date): Promise<ReadonlyMap<string, number> | null> {
  return spendThisMonth(
    database,
    keys.map((k) => k.id),
    now,
  ).catch(() => null);
}

/**
 * Presents a key with its budget usage (store counters, the audit log when the store lost them)
 * and its spend this month (`monthSpend`: read for this key alone when not given; null, unknown).
 */
export async function presentKey(
  store: Store,
  database: Knex,
  key: KeyRecord,
  now: Date,
  withUsage = true,
  monthSpend?: ReadonlyMap<string, number> | null,
): Promise<KeyPresentation> {
  const period = key.budgetPeriod ?? 'monthly';
  // A key just created has spent nothing: its window (and so its reset) is known without a read.
  const usage = withUsage
    ? await readBudgetUsage(store, key, now, () => spendFromAuditLog(database, key.id, period, now)).catch(() => undefined)
    : unspentBudget(key, now);
  const status = key.status === 'active' && usage?.exhausted ? 'budget_exhausted' : key.status;
  // A key just created (withUsage false) has spent nothing.
  const spent = !withUsage ? new Map<string, number>() : monthSpend !== undefined ? monthSpend : await monthSpendOf(database, [key], now);
  return {
    key_id: key.number,
    gateway_key_id: key.id,
    name: key.name,
    status,
    key_hint: key.secretHint,
    allowed_models: key.allowedModels,
    allowed_regions: key.allowedRegions,
    budget_limit: key.budgetLimitUsd,
    budget_period: key.budgetLimitUsd === null ? key.budgetPeriod : period,
    budget_used: usage ? usage.usedUsd : null,
    budget_remaining: usage ? usage.remainingUsd : null,
    budget_reserved: usage ? usage.reservedUsd : null,
    spent_this_month_usd: spent ? (spent.get(key.id) ?? 0) : null,
    resets_at: usage?.resetsAt?.toISOString() ?? null,
    rate_limit_rpm: key.rateLimitRpm,
    source: key.source,
    owner_user_id: key.ownerUserId,
    payer_id: key.payerId,
    read_only: key.source === 'crd',
    created: key.createdAt,
    updated: key.updatedAt,
  };
}
