// Monthly spend groups (docs/billing.md "Organisation budget", docs/administration.md "User
// billing"): caps on what several keys spend together in a UTC calendar month, enforced by the
// gateway in the same atomic store call as the key's own budget, rate limit and wallet
// (core/budget/scripts.ts). Two groups exist:
// - an organisation: the portal keys of its members (organisations.monthly_budget);
// - a user: the keys the user created, whoever pays for them (users.monthly_budget_usd), set by
//   owners and platform admins.
//
// Two store entries per group:
// - the spend counter, a hash like a key's monthly counter (bucket 0 plus the in-flight total),
//   counted for every request of every key in the group whether or not a cap is set, so setting
//   a cap mid-month starts from the real spend;
// - the cap in nano-USD (-1: none), copied from PostgreSQL with a short lifetime, so a change
//   made while the store was unreachable still arrives within `spendGroupCapTtlMs`; the portal
//   also writes it at once when an administrator changes it.
// Either missing → the gateway rebuilds both from PostgreSQL (the usage rollup, equal to the audit
// log, and the group's row).
import type { Knex } from 'knex';
import { USAGE_TABLE } from '../usage/rollup.js';
import { shardTag, type Store } from '../store/index.js';
import { budgetWindow, type BudgetWindow } from './periods.js';
import { toNano } from './usage.js';

/** Who a spend group is. */
export type SpendGroupScope = 'organisation' | 'user';

/** One monthly spend group. */
export interface SpendGroup {
  scope: SpendGroupScope;
  id: number;
}

/** Where each scope keeps its cap and which keys it counts. */
const scopes: Record<SpendGroupScope, { table: string; capColumn: string; keyColumn: string; storeName: string }> = {
  organisation: { table: 'organisations', capColumn: 'monthly_budget', keyColumn: 'organisation_id', storeName: 'org' },
  user: { table: 'users', capColumn: 'monthly_budget_usd', keyColumn: 'owner_user_id', storeName: 'user' },
};

/** How long the store keeps a group's cap before it is read from PostgreSQL again. */
export const spendGroupCapTtlMs = 60_000;

/** The spend groups a key counts in, in the order enforcement checks them. */
export function spendGroupsOf(key: { organisationId?: number | null; ownerUserId?: number | null }): SpendGroup[] {
  const groups: SpendGroup[] = [];
  if (key.organisationId !== null && key.organisationId !== undefined) groups.push({ scope: 'organisation', id: key.organisationId });
  if (key.ownerUserId !== null && key.ownerUserId !== undefined) groups.push({ scope: 'user', id: key.ownerUserId });
  return groups;
}

/** The group as an entity id (`org:5`, `user:3`): its counter and cap share this shard tag. */
function groupEntity(group: SpendGroup): string {
  return `${scopes[group.scope].storeName}:${group.id}`;
}

/** The monthly window of a group's spend counter at `now`. */
export function spendGroupWindow(group: SpendGroup, now: Date): BudgetWindow {
  return budgetWindow(groupEntity(group), 'monthly', now);
}

/** Store key of a group's cap (nano-USD, -1 = no budget), on the group's shard. */
export function spendGroupCapKey(group: SpendGroup): string {
  return `${scopes[group.scope].storeName}cap:${shardTag(groupEntity(group))}`;
}

/** The monthly budget administrators set on the group's row, in nano-USD; -1 when none (or no such row). */
export async function administeredCapNano(knex: Knex, group: SpendGroup): Promise<number> {
  const { table, capColumn } = scopes[group.scope];
  const row = (await knex(table).where({ id: group.id }).first({ cap: capColumn })) as { cap: string | number | null } | undefined;
  return row?.cap === null || row?.cap === undefined ? -1 : toNano(Number(row.cap));
}

/** The amount of the group's active hard-stop budget policy (core/budgets/policies.ts), in nano-USD; -1 when none. */
async function hardStopCapNano(knex: Knex, group: SpendGroup): Promise<number> {
  const subject = group.scope === 'user' ? { user_id: group.id } : { organisation_id: group.id };
  const row = (await knex('budget_policies')
    .where({ scope: group.scope, active: true, hard_stop: true, ...subject })
    .first('amount_usd')) as { amount_usd: string | number } | undefined;
  return row === undefined ? -1 : toNano(Number(row.amount_usd));
}

/** The lower of two caps, -1 meaning none. */
function tighterCap(a: number, b: number): number {
  if (a < 0) return b;
  if (b < 0) return a;
  return Math.min(a, b);
}

/**
 * The group's monthly cap in nano-USD, -1 when none: the budget its administrators set, or the
 * hard stop its own budget policy sets, whichever is lower. A policy can only lower what an
 * administrator allows — a member's hard stop of $1,000 does not lift a $5 cap set for them.
 */
export async function spendGroupCapNano(knex: Knex, group: SpendGroup): Promise<number> {
  const [administered, hardStop] = await Promise.all([administeredCapNano(knex, group), hardStopCapNano(knex, group)]);
  return tighterCap(administered, hardStop);
}

/** Writes the cap to the store (the gateway on a rebuild, with the cap it read). */
export async function publishSpendGroupCap(store: Store, group: SpendGroup, capNano: number): Promise<void> {
  await store.set(spendGroupCapKey(group), String(capNano), { ttlMs: spendGroupCapTtlMs });
}

/**
 * After a change to either source of the group's cap (the administrators' budget, a hard-stop
 * policy): reads the cap as it now is and writes it to the store, so every gateway applies it
 * from the next request. A store that cannot be reached leaves the gateways to re-read
 * PostgreSQL within `spendGroupCapTtlMs` (the error is handed to `onStoreError`).
 */
export async function republishSpendGroupCap(
  knex: Knex,
  store: Store,
  group: SpendGroup,
  onStoreError: (error: unknown) => void,
): Promise<void> {
  await publishSpendGroupCap(store, group, await spendGroupCapNano(knex, group)).catch(onStoreError);
}

/**
 * What the group's keys spent this month (nano-USD), and the ids of those keys (to add records
 * not yet written). Read from the hourly usage rollup, which the audit writer keeps equal to the
 * audit log in the same transaction, so this is a few rows per key and hour instead of a scan of
 * every request of the month.
 */
export async function spendGroupMonthSpend(knex: Knex, group: SpendGroup, now: Date): Promise<{ spentNano: number; keyIds: Set<string> }> {
  const from = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const keyIds = new Set(
    (await knex('api_keys')
      .where({ [scopes[group.scope].keyColumn]: group.id })
      .pluck('id')) as string[],
  );
  if (keyIds.size === 0) return { spentNano: 0, keyIds };
  const row = (await knex(USAGE_TABLE)
    .whereIn('key_id', [...keyIds])
    .andWhere('hour', '>=', from.toISOString())
    .sum({ nano: knex.raw('round(cost_usd * 1000000000)') })
    .first()) as { nano: string | number | null } | undefined;
  return { spentNano: Number(row?.nano ?? 0), keyIds };
}

/** How a refusal names the group to the caller. */
export function spendGroupLabel(group: SpendGroup): string {
  return group.scope === 'organisation' ? "Your organisation's monthly budget" : 'Your personal monthly budget';
}
