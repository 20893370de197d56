import type { Knex } from 'knex';

/**
 * A ledger entry that comes from an outside object (a processor payment, a refund): its
 * `reference` is unique in `wallet_entries`, so posting the same one twice — a webhook delivered
 * again, two replicas racing — changes the ledger once. Posted inside the caller's transaction,
 * with a row in `billing_mirror_outbox` for the store mirror, applied after commit
 * (mirror.ts applyMirrorOutbox) exactly once.
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
