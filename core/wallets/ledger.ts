import type { AuditRecord } from '../audit/record.js';
import type { Knex } from 'knex';
import { nanoPerUsd, toNano } from '../budget/usage.js';
import type { Store } from '../store/types.js';
import { applyMirrorOutbox, ledgerBalanceNano, loadMirrorOnce } from './mirror.js';

/** One ledger entry as the API shows it. */
export interface WalletEntry {
  id: string;
  payerId: string;
  amountUsd: number;
  kind: 'credit' | 'debit';
  reason: string;
  requestId: string | null;
  actor: string;
  createdAt: string;
}

interface EntryRow {
  id: string | number;
  payer_id: string;
  amount_micro: string | number;
  amount_nano: string | number | null;
  kind: 'credit' | 'debit';
  reason: string;
  request_id: string | null;
  actor: string;
  created_at: Date;
}

/** An entry's amount in nano-USD; rows from before nano-USD have micro-USD only. */
function amountNano(row: EntryRow): number {
  return row.amount_nano === null || row.amount_nano === undefined ? Number(row.amount_micro) * 1000 : Number(row.amount_nano);
}

/** The amount columns of a new row: nano-USD exact, and micro-USD for a release that reads only that. */
function amountColumns(nano: number): { amount_nano: number; amount_micro: number } {
  return { amount_nano: nano, amount_micro: Math.round(nano / 1000) };
}

function toEntry(row: EntryRow): WalletEntry {
  return {
    id: String(row.id),
    payerId: row.payer_id,
    amountUsd: amountNano(row) / nanoPerUsd,
    kind: row.kind,
    reason: row.reason,
    requestId: row.request_id,
    actor: row.actor,
    createdAt: new Date(row.created_at).toISOString(),
  };
}

/** A debit to record for a settled request. */
export interface WalletDebit {
  payerId: string;
  requestId: string;
  costUsd: number;
}

/**
 * The wallet ledger in PostgreSQL (system of record) and its mirror in the store (what the hot
 * path reserves against; mirror.ts). Credits are ledger entries with an outbox row, added to the
 * mirror after commit; debits are reserved and settled in the store per request and written to
 * the ledger with the request's audit record.
 */
export class WalletLedger {
  constructor(
    private readonly knex: Knex,
    private readonly store: Store,
  ) {}

  /** Balance from the ledger, in nano-USD (rows written before nano-USD count their micro-USD). */
  async balanceNano(payerId: string, trx: Knex | Knex.Transaction = this.knex): Promise<number> {
    return ledgerBalanceNano(trx, payerId);
  }

  /**
   * Credits a payer: a ledger entry and its outbox row in one transaction (with the balance it
   * makes, read there), then the mirror. Once committed the credit is made, whatever the store
   * says: a store that does not answer leaves the outbox row to the sweeps. Before, a store
   * failure after the commit answered 503 "retry", and a retry credited the payer twice (outside
   * probe); nothing that can fail runs after the commit now.
   */
  async credit(payerId: string, amountUsd: number, reason: string, actor: string): Promise<{ entry: WalletEntry; balanceUsd: number }> {
    const nano = toNano(amountUsd);
    const { row, balanceNano } = await this.knex.transaction(async (trx) => {
      const [inserted] = (await trx('wallet_entries')
        .insert({ payer_id: payerId, ...amountColumns(nano), kind: 'credit', reason, actor })
        .returning('*')) as EntryRow[];
      await trx('billing_mirror_outbox').insert({ wallet_entry_id: inserted!.id, payer_id: payerId, amount_nano: nano });
      return { row: inserted!, balanceNano: await this.balanceNano(payerId, trx) };
    });
    await applyMirrorOutbox(this.knex, this.store, { entryIds: [Number(row.id)] }).catch(() => undefined);
    return { entry: toEntry(row), balanceUsd: balanceNano / nanoPerUsd };
  }

  /**
   * Loads the ledger balance into the store unless a mirror is already there (cold start, or a
   * store that lost it), less `pendingNano`: debits not yet in the ledger and reservations in
   * flight (these also per lease field, core/budget/leases.ts). True when this load put it there.
   */
  async loadMirror(payerId: string, pendingNano: number | (() => number) = 0, leases?: ReadonlyMap<string, number>): Promise<boolean> {
    return loadMirrorOnce(this.knex, this.store, payerId, pendingNano, leases);
  }

  /**
   * The debits of a batch of audit records (those with a payer), in the batch's transaction: the
   * audit writer's `onBatch` wherever it runs (inline, a worker thread, its own process).
   */
  static recordAuditDebits(trx: Knex.Transaction, records: readonly AuditRecord[]): Promise<void> {
    return WalletLedger.recordDebits(
      trx,
      records.flatMap((r) => (r.payerId ? [{ payerId: r.payerId, requestId: r.requestId, costUsd: r.costUsd }] : [])),
    );
  }

  /** Records settled requests as debits, idempotently per request id (inside an audit batch). */
  static async recordDebits(trx: Knex.Transaction, debits: readonly WalletDebit[]): Promise<void> {
    const rows = debits
      .filter((d) => d.costUsd > 0)
      .map((d) => ({
        payer_id: d.payerId,
        ...amountColumns(-toNano(d.costUsd)),
        kind: 'debit',
        reason: 'request',
        request_id: d.requestId,
        actor: 'gateway',
      }));
    if (rows.length > 0) await trx('wallet_entries').insert(rows).onConflict('request_id').ignore();
  }

  /**
   * Balance and latest entries (newest first) from one snapshot: read separately, a debit
   * committed in between would make the two disagree.
   */
  async statement(payerId: string, limit: number): Promise<{ balanceNano: number; entries: WalletEntry[] }> {
    return this.knex.transaction(
      async (trx) => {
        const balanceNano = await this.balanceNano(payerId, trx);
        const rows = await trx('wallet_entries').where({ payer_id: payerId }).orderBy('id', 'desc').limit(limit);
        return { balanceNano, entries: (rows as EntryRow[]).map(toEntry) };
      },
      { isolationLevel: 'repeatable read' },
    );
  }
}
