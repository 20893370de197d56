import type { Knex } from 'knex';
import { shardTag } from '../store/shard-tags.js';
import type { Store, StoreScript } from '../store/types.js';
import { walletKey } from './ledger.js';

/**
 * A ledger entry that comes from an outside object (a processor payment, a refund): its
 * `reference` is unique in `wallet_entries`, so posting the same one twice — a webhook delivered
 * again, two replicas racing — changes the ledger once. Posted inside the caller's transaction,
 * with a row in `billing_mirror_outbox` for the store mirror, applied after commit
 * (applyMirrorOutbox) exactly once.
 */
export interface ReferencedEntry {
  payerId: string;
  /** Signed nano-USD: positive credit, negative reversal. */
  amountNano: number;
  reason: string;
  reference: string;
  actor: string;
}

/** Posts `entry` in `trx`; its id, or undefined when that reference was already posted. */
export async function postReferencedEntry(trx: Knex.Transaction, entry: ReferencedEntry): Promise<number | undefined> {
  if (!Number.isSafeInteger(entry.amountNano) || entry.amountNano === 0)
    throw new Error(`ledger amount must be a non-zero integer: ${entry.amountNano}`);
  const rows = (await trx('wallet_entries')
    .insert({
      payer_id: entry.payerId,
      amount_nano: entry.amountNano,
      amount_micro: Math.round(entry.amountNano / 1000),
      kind: entry.amountNano > 0 ? 'credit' : 'debit',
      reason: entry.reason.slice(0, 500),
      reference: entry.reference,
      actor: entry.actor,
    })
    .onConflict('reference')
    .ignore()
    .returning('id')) as { id: string | number }[];
  const id = rows[0]?.id;
  if (id === undefined) return undefined;
  await trx('billing_mirror_outbox').insert({ wallet_entry_id: id, payer_id: entry.payerId, amount_nano: entry.amountNano });
  return Number(id);
}

/** How long a mirror marker remembers an applied entry (far beyond any outbox retry). */
const markerTtlMs = 7 * 24 * 3600_000;

/**
 * Store key of the marker of an entry applied to its payer's mirror. On a cluster it carries the
 * payer's tag (one script reads marker and mirror); on a single Redis it keeps the name releases
 * before cluster support used, so a replica of each version sweeping the same outbox row during
 * an upgrade still sees one marker and applies the entry once.
 */
function mirrorMarkerKey(store: Store, payerId: string, entryId: string | number): string {
  return store.sharded ? `mirrored:${shardTag(payerId)}:${entryId}` : `mirrored:${entryId}`;
}

/**
 * Adds an entry's amount to the payer's mirror once: the marker (mirrorMarkerKey) makes a
 * second application (a retry after a lost reply, another replica's sweep) change nothing. An
 * absent mirror is left absent — it is loaded whole from the ledger, entry included, when next
 * needed. KEYS: mirror, marker. ARGV: amount nano, marker ttl ms.
 */
export const applyEntryToMirror: StoreScript<void> = {
  name: 'wallet_apply_entry_once',
  lua: `
if redis.call('SET', KEYS[2], '1', 'NX', 'PX', ARGV[2]) == false then return 0 end
if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('INCRBY', KEYS[1], ARGV[1]) end
return 0
`,
  memory(redis, keys, args) {
    if (redis.get(keys[1]!) !== null) return 0;
    redis.set(keys[1]!, '1', Number(args[1]));
    if (redis.get(keys[0]!) !== null) redis.incrBy(keys[0]!, Number(args[0]));
    return 0;
  },
  decode: () => undefined,
};

/**
 * Applies outbox rows to the store and deletes them: after a commit (`entryIds` given) or as a
 * sweep of everything older than `olderThanMs` (entries whose applier crashed). Safe to run from
 * any number of replicas at once (the marker).
 */
export async function applyMirrorOutbox(
  knex: Knex,
  store: Store,
  which: { entryIds: readonly number[] } | { olderThanMs: number; now: Date },
): Promise<number> {
  const query = knex('billing_mirror_outbox').select('wallet_entry_id', 'payer_id', 'amount_nano');
  const rows = (await ('entryIds' in which
    ? which.entryIds.length === 0
      ? Promise.resolve([])
      : query.whereIn('wallet_entry_id', which.entryIds as number[])
    : query
        .where('created_at', '<', new Date(which.now.getTime() - which.olderThanMs))
        .orderBy('wallet_entry_id')
        .limit(500))) as { wallet_entry_id: string | number; payer_id: string; amount_nano: string | number }[];
  for (const row of rows) {
    await store.runScript(
      applyEntryToMirror,
      [walletKey(row.payer_id), mirrorMarkerKey(store, row.payer_id, row.wallet_entry_id)],
      [Number(row.amount_nano), markerTtlMs],
    );
    await knex('billing_mirror_outbox').where({ wallet_entry_id: row.wallet_entry_id }).delete();
  }
  return rows.length;
}
