// An organisation's monthly budget (docs/billing.md "Organisation budget"): a cap on what the
// portal keys of its members spend together in a UTC calendar month, enforced by the gateway in
// the same atomic store call as the key's own budget, rate limit and wallet (core/budget/scripts.ts).
//
// Two store entries per organisation:
// - the spend counter, a hash like a key's monthly counter (bucket 0 plus the in-flight total),
//   counted for every request of every member's key whether or not a cap is set, so setting a
//   cap mid-month starts from the real spend;
// - the cap in nano-USD (-1: none), copied from PostgreSQL with a short lifetime, so a change
//   made while the store was unreachable still arrives within `organisationCapTtlMs`; the portal
//   also writes it at once when an administrator changes it.
// Either missing → the gateway rebuilds both from PostgreSQL (the usage rollup, equal to the audit
// log, and organisations).
import type { Knex } from 'knex';
import { USAGE_TABLE } from '../usage/rollup.js';
import type { Store } from '../store/index.js';
import { budgetWindow, type BudgetWindow } from './periods.js';
import { toNano } from './usage.js';

/** How long the store keeps an organisation's cap before it is read from PostgreSQL again. */
export const organisationCapTtlMs = 60_000;

/** The monthly window of an organisation's spend counter at `now`. */
export function organisationBudgetWindow(organisationId: number, now: Date): BudgetWindow {
  return budgetWindow(`org:${organisationId}`, 'monthly', now);
}

/** Store key of an organisation's cap (nano-USD, -1 = no budget). */
export function organisationCapKey(organisationId: number): string {
  return `orgcap:${organisationId}`;
}

/** The organisation's monthly budget from PostgreSQL in nano-USD, -1 when none (or no such organisation). */
export async function organisationCapNano(knex: Knex, organisationId: number): Promise<number> {
  const row = (await knex('organisations').where({ id: organisationId }).first('monthly_budget')) as
    { monthly_budget: string | number | null } | undefined;
  return row?.monthly_budget === null || row?.monthly_budget === undefined ? -1 : toNano(Number(row.monthly_budget));
}

/** Writes the cap to the store (the portal after a change, the gateway on a rebuild). */
export async function publishOrganisationCap(store: Store, organisationId: number, capNano: number): Promise<void> {
  await store.set(organisationCapKey(organisationId), String(capNano), { ttlMs: organisationCapTtlMs });
}

/**
 * What the organisation's members' keys spent this month (nano-USD), and the ids of those keys
 * (to add records not yet written). Read from the hourly usage rollup, which the audit writer
 * keeps equal to the audit log in the same transaction, so this is a few rows per key and hour
 * instead of a scan of every request of the month.
 */
export async function organisationMonthSpend(
  knex: Knex,
  organisationId: number,
  now: Date,
): Promise<{ spentNano: number; keyIds: Set<string> }> {
  const from = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const keyIds = new Set((await knex('api_keys').where({ organisation_id: organisationId }).pluck('id')) as string[]);
  if (keyIds.size === 0) return { spentNano: 0, keyIds };
  const row = (await knex(USAGE_TABLE)
    .whereIn('key_id', [...keyIds])
    .andWhere('hour', '>=', from.toISOString())
    .sum({ nano: knex.raw('round(cost_usd * 1000000000)') })
    .first()) as { nano: string | number | null } | undefined;
  return { spentNano: Number(row?.nano ?? 0), keyIds };
}
