import type { Knex } from 'knex';
import { AUDIT_TABLE } from '../audit/rows.js';
import type { BudgetPeriod } from '../keys/record.js';
import type { StoreScript } from '../store/types.js';
import { generationField, newLeaseGeneration } from './leases.js';
import { rollingWindowDays, type BudgetWindow } from './periods.js';
import { reservedField } from './scripts.js';

const dayMs = 86_400_000;

/** Spend per budget bucket, integer nano-USD (the counter hash's fields and values). */
export type BucketSpend = Map<number, number>;

/** When the window of `period` containing `now` began (rolling: the oldest counted day). */
export function windowStart(period: BudgetPeriod, now: Date): Date {
  switch (period) {
    case 'daily':
      return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
    case 'monthly':
      return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
    case 'rolling':
      return new Date((Math.floor(now.getTime() / dayMs) - rollingWindowDays + 1) * dayMs);
    default: {
      const unreachable: never = period;
      throw new Error(`unknown budget period ${String(unreachable)}`);
    }
  }
}

/** The bucket a request made at `at` counts in (as enforcement files it). */
export function bucketOf(period: BudgetPeriod, at: Date): number {
  return period === 'rolling' ? Math.floor(at.getTime() / dayMs) : 0;
}

/**
 * A key's settled spend in its current window from the audit log, per bucket — what the
 * counter held before the store lost it (costs are nano-dollar exact in both). The caller adds what PostgreSQL cannot know yet: records not yet written
 * and requests still in flight.
 */
export async function spendFromAuditLog(knex: Knex, keyId: string, period: BudgetPeriod, now: Date): Promise<BucketSpend> {
  const from = windowStart(period, now);
  const bucket = period === 'rolling' ? knex.raw('floor(extract(epoch from ts) / 86400)::bigint') : knex.raw('0');
  const rows = (await knex(AUDIT_TABLE)
    .where('key_id', keyId)
    .andWhere('ts', '>=', from.toISOString())
    .select({ bucket })
    .sum({ nano: knex.raw('round(cost_usd * 1000000000)') })
    .groupByRaw('1')) as { bucket: string | number; nano: string | number | null }[];
  return new Map(rows.map((row) => [Number(row.bucket), Number(row.nano ?? 0)]));
}

/**
 * Puts a rebuilt counter in the store unless one appeared meanwhile (another replica rebuilt
 * it, or a request was counted): never overwrites reservations. KEYS: counter hash.
 * ARGV: ttl ms, then bucket, nano pairs (at least one, so the hash exists even at zero spend).
 */
export const loadBudgetIfAbsent: StoreScript<boolean> = {
  name: 'budget_load_if_absent',
  lua: `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
for i = 2, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
`,
  memory(redis, keys, args) {
    if (redis.pttl(keys[0]!) !== -2) return 0;
    for (let i = 1; i + 1 < args.length; i += 2) redis.hset(keys[0]!, args[i]!, args[i + 1]!);
    redis.pexpire(keys[0]!, Number(args[0]));
    return 1;
  },
  decode: (reply) => reply === 1,
};

/**
 * The store arguments of loadBudgetIfAbsent for a window, its rebuilt spend (reservations in
 * flight included) and those reservations per lease field (leases.ts).
 */
export function loadBudgetArgs(
  window: BudgetWindow,
  spend: BucketSpend,
  leases: ReadonlyMap<string, number> = new Map(),
): (string | number)[] {
  const pairs = new Map(spend);
  if (!pairs.has(window.bucket)) pairs.set(window.bucket, 0);
  const buckets = [...pairs].filter(([b]) => b >= window.minBucket).flatMap(([b, nano]) => [b, nano]);
  // The reservations this gateway holds are in flight, under the names of their leases (other
  // replicas' are not known here: their settlements find no lease and charge their actual cost).
  // A new generation, so that a lease field made on the lost counter is never made again on this
  // one (leases.ts).
  let reservedNano = 0;
  for (const nano of leases.values()) reservedNano += nano;
  return [window.ttlMs, ...buckets, reservedField, reservedNano, generationField, newLeaseGeneration(), ...[...leases].flat()];
}

/**
 * Adds reservations in flight to a key's counter that is already in the store — another
 * gateway rebuilt it without knowing them (a key's budget settings changed while they were in
 * flight: gateway/src/enforcement/key-flights.ts) — each under its lease field, counted in its
 * bucket and in the counter's `reserved`. Nothing when the counter is missing (its rebuild will
 * carry them). Not retried by callers: applied twice it would count them twice. KEYS: counter
 * hash. ARGV: (field, bucket, nano) triples.
 */
export const addLeasesIfPresent: StoreScript<boolean> = {
  name: 'budget_add_leases_if_present',
  lua: `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
for i = 1, #ARGV, 3 do
  redis.call('HINCRBY', KEYS[1], ARGV[i], ARGV[i + 2])
  redis.call('HINCRBY', KEYS[1], ARGV[i + 1], ARGV[i + 2])
  redis.call('HINCRBY', KEYS[1], '${reservedField}', ARGV[i + 2])
end
return 1
`,
  memory(redis, keys, args) {
    if (redis.pttl(keys[0]!) === -2) return 0;
    for (let i = 0; i + 2 < args.length; i += 3) {
      const nano = Number(args[i + 2]);
      redis.hincrBy(keys[0]!, args[i]!, nano);
      redis.hincrBy(keys[0]!, args[i + 1]!, nano);
      redis.hincrBy(keys[0]!, reservedField, nano);
    }
    return 1;
  },
  decode: (reply) => reply === 1,
};
