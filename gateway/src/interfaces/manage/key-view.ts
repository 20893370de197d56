import type { Knex } from 'knex';
import { readBudgetUsage, spendFromAuditLog, unspentBudget } from '../../../../core/budget/index.js';
import type { KeyRecord } from '../../../../core/keys/index.js';
import type { Store } from '../../../../core/store/index.js';

/** A key as the Management API shows it (docs/spec-conformance.md 2.3 read fields, plus the policy fields). */
export async function keyView(
  store: Store,
  key: KeyRecord,
  now: Date,
  options: { noSpendYet?: boolean; database?: Knex } = {},
): Promise<Record<string, unknown>> {
  // A key just created has spent nothing: its view needs no store read (which could fail and
  // lose the answer that carries the secret). A counter the store lost is read from the audit log.
  const database = options.database;
  const fromAuditLog = database ? () => spendFromAuditLog(database, key.id, key.budgetPeriod ?? 'monthly', now) : undefined;
  const budget = options.noSpendYet ? unspentBudget(key, now) : await readBudgetUsage(store, key, now, fromAuditLog);
  // `budget_exhausted` is derived, not stored: it ends by itself when the period resets.
  const status = key.status === 'active' && budget.exhausted ? 'budget_exhausted' : key.status;
  return {
    id: key.id,
    object: 'managed_key',
    name: key.name,
    status,
    budget_limit: key.budgetLimitUsd,
    budget_used: budget.usedUsd,
    budget_remaining: budget.remainingUsd,
    // The worst cases reserved by requests in flight, part of budget_used until they settle.
    budget_reserved: budget.reservedUsd,
    budget_period: key.budgetLimitUsd === null ? key.budgetPeriod : (key.budgetPeriod ?? 'monthly'),
    resets_at: budget.resetsAt?.toISOString() ?? null,
    allowed_models: key.allowedModels,
    allowed_regions: key.allowedRegions,
    rate_limit_rpm: key.rateLimitRpm,
    metadata: key.metadata,
    payer: key.payerId,
    source: key.source,
    key_hint: key.secretHint,
    created: key.createdAt,
    updated: key.updatedAt,
  };
}
