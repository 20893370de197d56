import type { Knex } from 'knex';
import { addToRollup } from '../usage/rollup.js';
import type { AuditRecord } from './record.js';
import { AUDIT_TABLE, toRow } from './rows.js';

/** Rows per INSERT statement: 18 parameters a row stays far below PostgreSQL's 65,535 limit. */
const ROWS_PER_STATEMENT = 1000;

/**
 * Inserts records in one transaction, skipping rows whose (request_id, ts) already exists, and
 * adds them to the hourly usage rollup and runs `onBatch` in the same transaction, both with only
 * the records actually inserted: a batch retried after its first attempt committed (crash
 * before the ack) changes nothing twice.
 */
export async function insertAuditBatch(
  knex: Knex,
  records: readonly AuditRecord[],
  onBatch?: (trx: Knex.Transaction, records: AuditRecord[]) => Promise<void>,
): Promise<{ inserted: number; skipped: number }> {
  return knex.transaction(async (trx) => {
    const byKey = new Map<string, AuditRecord>();
    for (const record of records) {
      const key = `${record.requestId}\u0000${record.timestamp}`;
      if (!byKey.has(key)) byKey.set(key, record);
    }
    const inserted: AuditRecord[] = [];
    const unique = [...byKey.values()];
    for (let i = 0; i < unique.length; i += ROWS_PER_STATEMENT) {
      const rows = await trx(AUDIT_TABLE)
        .insert(unique.slice(i, i + ROWS_PER_STATEMENT).map(toRow))
        .onConflict(['request_id', 'ts'])
        .ignore()
        .returning<{ request_id: string; ts: Date }[]>(['request_id', 'ts']);
      for (const row of rows) {
        const record = byKey.get(`${row.request_id}\u0000${new Date(row.ts).toISOString()}`);
        if (record) inserted.push(record);
      }
    }
    await addToRollup(trx, inserted);
    if (onBatch && inserted.length > 0) await onBatch(trx, inserted);
    return { inserted: inserted.length, skipped: records.length - inserted.length };
  });
}
