import type { Knex } from 'knex';
import { counterFields, generationField, minuteOf, newLeaseGeneration } from '../budget/leases.js';
import { shardTag } from '../store/shard-tags.js';
import type { Store, StoreScript } from '../store/types.js';

/**
 * The wallet mirror: each payer's balance in the store (integer nano-USD), what the enforcement
 * script reserves against. The ledger in PostgreSQL is the truth; the mirror follows it by two
 * paths that must never both count an entry, nor both miss one:
 *
 * - a missing mirror is loaded whole from the ledger (loadMirrorOnce), and
 * - each credit or reversal is added to a loaded mirror once, from `billing_mirror_outbox`
 *   (applyMirrorOutbox), which its ledger entry's transaction wrote.
 *
 * An entry committed while a load is under way is in the load's snapshot or it is not. If it is,
 * the load marks it applied (its outbox row is in the same snapshot), so adding it afterwards
 * changes nothing; if it is not, adding it to a mirror not loaded yet keeps its outbox row, so
 * it is added once the load has put the mirror there. Before, a credit racing a wallet's first
 * use was counted twice or lost (outside probe: a ledger driven below zero).
 *
 * An earlier release kept micro-USD under `wallet:`; that key is left to expire.
 */
export function walletKey(payerId: string): string {
  return `funds:${shardTag(payerId)}`;
}

/**
 * The leases of the reservations held on a payer's mirror (core/budget/leases.ts): a hash beside
 * the mirror, on its shard, that the enforcement script reads and writes with it.
 */
export function walletLeasesKey(payerId: string): string {
  return `funds-leases:${shardTag(payerId)}`;
}

/**
 * A payer's balance as the gateways will enforce it, or null when the store has no mirror: the
 * mirror plus what reservations whose lease ended unsettled still hold (a killed gateway's; the
 * next enforcement gives them back, core/budget/leases.ts) — so a reader that acts on the balance,
 * such as the automatic top-up, does not charge a card for funds merely held by a dead request.
 */
export async function enforcedBalanceNano(store: Store, payerId: string, now: Date): Promise<number | null> {
  return store.runScript(readEnforcedBalance, [walletKey(payerId), walletLeasesKey(payerId)], [minuteOf(now.getTime())]);
}

/**
 * The mirror and its ended leases read at one instant (read apart, a give-back between the two
 * reads would be missed). KEYS: mirror, its leases. ARGV: the current minute. The balance as
 * text (an exact integer), or nil without a mirror.
 */
const readEnforcedBalance: StoreScript<number | null> = {
  name: 'wallet_read_enforced_balance',
  lua: `
local mirrored = redis.call('GET', KEYS[1])
if not mirrored then return false end
local flat = redis.call('HGETALL', KEYS[2])
local back = 0
for i = 1, #flat, 2 do
  local ends = string.match(flat[i], '^lease:(%d+):%d+:%w+:%w+$')
  if ends and tonumber(ends) < tonumber(ARGV[1]) then back = back + tonumber(flat[i + 1]) end
end
return string.format('%d', tonumber(mirrored) + back)
`,
  memory(redis, keys, args) {
    const mirrored = redis.get(keys[0]!);
    if (mirrored === null) return null;
    let back = 0;
    for (const nano of counterFields(redis.hgetall(keys[1]!), Number(args[0])).abandoned.values()) back += nano;
    return String(Number(mirrored) + back);
  },
  decode: (reply) => (reply === null ? null : Number(reply)),
};

/** How long a mirror marker remembers an applied entry (far beyond any outbox retry). */
const markerTtlMs = 7 * 24 * 3600_000;

/**
 * How long an outbox row is kept while its payer has no mirror: past any load under way when it
 * was committed (a load is one ledger read and one store command). Then it is dropped: the next
 * load reads the entry from the ledger.
 */
const absentMirrorKeepMs = 60_000;

/**
 * Store key of the marker of an entry applied to its payer's mirror. On a cluster it carries the
 * payer's tag (one script reads marker and mirror); on a single Redis it keeps the name releases
 * before cluster support used, so a replica of each version sweeping the same outbox row during
 * an upgrade still sees one marker and applies the entry once.
 */
function mirrorMarkerKey(store: Store, payerId: string, entryId: string | number): string {
  return store.sharded ? `mirrored:${shardTag(payerId)}:${entryId}` : `mirrored:${entryId}`;
}

/** What applying an entry did: added it, found it added already, or found no mirror to add it to. */
type Applied = 'applied' | 'already' | 'no_mirror';

/**
 * Adds an entry's amount to the payer's mirror once: the marker makes a second application (a
 * retry after a lost reply, another replica's sweep) change nothing. A mirror that is not there
 * is left alone and the entry not marked: the load that puts it there counts the entry, or
 * leaves it to this. KEYS: mirror, marker. ARGV: amount nano, marker ttl ms.
 */
const applyEntryToMirror: StoreScript<Applied> = {
  name: 'wallet_apply_entry_once',
  lua: `
if redis.call('EXISTS', KEYS[1]) == 0 then return 2 end
if redis.call('SET', KEYS[2], '1', 'NX', 'PX', ARGV[2]) == false then return 0 end
redis.call('INCRBY', KEYS[1], ARGV[1])
return 1
`,
  memory(redis, keys, args) {
    if (redis.get(keys[0]!) === null) return 2;
    if (redis.get(keys[1]!) !== null) return 0;
    redis.set(keys[1]!, '1', Number(args[1]));
    redis.incrBy(keys[0]!, Number(args[0]));
    return 1;
  },
  decode: (reply) => (reply === 1 ? 'applied' : reply === 2 ? 'no_mirror' : 'already'),
};

/**
 * Puts a loaded balance in the store unless a mirror is there already (it may hold reservations
 * in flight), marking the entries the balance already counts whose outbox rows are not applied
 * yet. The mirror's leases become those of the reservations the balance leaves out (the loading
 * gateway's in flight), on a new generation: a lease left from before would give back a
 * reservation the new balance never took. KEYS: mirror, its leases, then those entries' markers.
 * ARGV: balance nano, marker ttl ms, then field and value pairs for the leases hash (the
 * generation, each lease).
 */
const loadMirrorIfAbsent: StoreScript<boolean> = {
  name: 'wallet_load_if_absent',
  lua: `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('DEL', KEYS[2])
for i = 3, #ARGV, 2 do redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1]) end
for i = 3, #KEYS do redis.call('SET', KEYS[i], '1', 'PX', ARGV[2]) end
return 1
`,
  memory(redis, keys, args) {
    if (redis.get(keys[0]!) !== null) return 0;
    redis.set(keys[0]!, args[0]!);
    redis.del(keys[1]!);
    for (let i = 2; i + 1 < args.length; i += 2) redis.hset(keys[1]!, args[i]!, args[i + 1]!);
    for (const marker of keys.slice(2)) redis.set(marker, '1', Number(args[1]));
    return 1;
  },
  decode: (reply) => reply === 1,
};

/** Balance from the ledger, in nano-USD (rows written before nano-USD count their micro-USD). */
export async function ledgerBalanceNano(trx: Knex | Knex.Transaction, payerId: string): Promise<number> {
  const row = await trx('wallet_entries')
    .where({ payer_id: payerId })
    .sum({ total: trx.raw('coalesce(amount_nano, amount_micro * 1000)') })
    .first();
  return Number((row as { total: string | null } | undefined)?.total ?? 0);
}

/**
 * Loads a payer's mirror from the ledger unless one is there (cold start, a store that lost it),
 * less `pendingNano` (debits not yet in the ledger, reservations in flight — these also given as
 * `leases`, per lease field; as a function, asked once the ledger is read). The balance and the entries still waiting in the outbox are read
 * from one snapshot. True when this load put the mirror there (false: one was there already).
 */
export async function loadMirrorOnce(
  knex: Knex,
  store: Store,
  payerId: string,
  pendingNano: number | (() => number),
  leases: ReadonlyMap<string, number> = new Map(),
): Promise<boolean> {
  // One statement, so one snapshot, and one round trip: a load held up (behind the audit writer on
  // the embedded database's one connection, say) is a load whose `pendingNano` grows stale.
  const row = (await knex
    .select({
      total: knex('wallet_entries').where({ payer_id: payerId }).sum(knex.raw('coalesce(amount_nano, amount_micro * 1000)')),
      waiting: knex('billing_mirror_outbox')
        .where({ payer_id: payerId })
        .select(knex.raw("coalesce(string_agg(wallet_entry_id::text, ','), '')")),
    })
    .first()) as { total: string | number | null; waiting: string | null };
  const markers = (row.waiting ?? '')
    .split(',')
    .filter((id) => id !== '')
    .map((id) => mirrorMarkerKey(store, payerId, id));
  return store.runScript(
    loadMirrorIfAbsent,
    [walletKey(payerId), walletLeasesKey(payerId), ...markers],
    [
      Number(row.total ?? 0) - (typeof pendingNano === 'function' ? pendingNano() : pendingNano),
      markerTtlMs,
      generationField,
      newLeaseGeneration(),
      ...[...leases].flat(),
    ],
  );
}

/**
 * Applies outbox rows to the store and deletes them: after a commit (`entryIds` given) or as a
 * sweep of everything older than `olderThanMs` (entries whose applier crashed, or whose payer had
 * no mirror yet). Safe to run from any number of replicas at once (the marker). Returns how many
 * rows it looked at.
 */
export async function applyMirrorOutbox(
  knex: Knex,
  store: Store,
  which: { entryIds: readonly number[] } | { olderThanMs: number; now: Date },
): Promise<number> {
  // The row's age by the database's clock, which wrote created_at: an application host whose clock
  // runs ahead would otherwise drop a row kept for a load under way (review).
  const query = knex('billing_mirror_outbox').select(
    'wallet_entry_id',
    'payer_id',
    'amount_nano',
    knex.raw('extract(epoch from (now() - created_at)) * 1000 as age_ms'),
  );
  const rows = (await ('entryIds' in which
    ? which.entryIds.length === 0
      ? Promise.resolve([])
      : query.whereIn('wallet_entry_id', which.entryIds as number[])
    : query
        .where('created_at', '<', new Date(which.now.getTime() - which.olderThanMs))
        .orderBy('wallet_entry_id')
        .limit(500))) as { wallet_entry_id: string | number; payer_id: string; amount_nano: string | number; age_ms: string | number }[];
  for (const row of rows) {
    const outcome = await store.runScript(
      applyEntryToMirror,
      [walletKey(row.payer_id), mirrorMarkerKey(store, row.payer_id, row.wallet_entry_id)],
      [Number(row.amount_nano), markerTtlMs],
    );
    // Kept while a load that began before its commit may still put a mirror there without it.
    if (outcome === 'no_mirror' && Number(row.age_ms) < absentMirrorKeepMs) continue;
    await knex('billing_mirror_outbox').where({ wallet_entry_id: row.wallet_entry_id }).delete();
  }
  return rows.length;
}

/**
 * Applies what the outbox still holds every `everyMs`: credits made while the store did not
 * answer, or before their payer's mirror was loaded. Every gateway and portal replica may run
 * one (the marker applies an entry once). Returns its stop.
 */
export function sweepMirrorOutbox(knex: Knex, store: Store, everyMs: number, onError: (error: unknown) => void): () => Promise<void> {
  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    running ??= applyMirrorOutbox(knex, store, { olderThanMs: everyMs, now: new Date() }).then(
      () => void (running = undefined),
      (error: unknown) => {
        running = undefined;
        onError(error);
      },
    );
  }, everyMs).unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}
