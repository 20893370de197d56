// What keys spent this calendar month (UTC), from the hourly rollup: the spend a key without a
// budget shows, where its budget counter would be (it has none, so the counter counts nothing).
import type { Knex } from 'knex';
import { nanoPerUsd } from '../budget/usage.js';
import { USAGE_TABLE } from './rollup.js';

/** The first instant of `now`'s UTC month. */
function monthStart(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
}

/**
 * Each key's spend since the start of the UTC month, in USD exact to the nano-dollar (summed as
 * the rollup keeps it, in nano); a key with none is absent. One query for any number of keys.
 * The rollup is written with the audit rows, so a request shows here once its record is written.
 */
export async function spendThisMonth(knex: Knex, keyIds: readonly string[], now: Date): Promise<Map<string, number>> {
  if (keyIds.length === 0) return new Map();
  const rows = (await knex(USAGE_TABLE)
    .whereIn('key_id', keyIds)
    .andWhere('hour', '>=', monthStart(now).toISOString())
    .groupBy('key_id')
    .select('key_id')
    .sum({ nano: knex.raw('round(cost_usd * 1000000000)') })) as { key_id: string; nano: string | number | null }[];
  return new Map(rows.map((row) => [row.key_id, Number(row.nano ?? 0) / nanoPerUsd]));
}
