import type { Knex } from 'knex';
import { addToRollup } from '../usage/rollup.js';
import type { AuditRecord } from './record.js';
import { AUDIT_INSERT_COLUMNS, AUDIT_TABLE, toRow } from './rows.js';

/** Rows per INSERT statement: bounds one statement's JSON document (~0.5 KiB a row). */
const ROWS_PER_STATEMENT = 1000;

const columnList = AUDIT_INSERT_COLUMNS.join(', ');

/**
 * Inserts the records' rows into `table` (the audit log, or a table made `like` it with its
 * primary key), skipping any (request_id, ts) already there, and returns the keys of the rows
 * actually inserted. The rows travel as one JSON document, unpacked by PostgreSQL into the
 * table's row type: one parameter per statement instead of one per cell. The audit writer's
 * thread spent ~17 % of its time in knex numbering 1,900 placeholders per 100-row batch, and more
 * in the driver encoding each cell (bench/RESULTS.md); JSON.stringify of the batch is one call.
 */
export async function insertAuditRows(
  db: Knex | Knex.Transaction,
  records: readonly AuditRecord[],
  table: string = AUDIT_TABLE,
): Promise<{ request_id: string; ts: Date }[]> {
  const { rows } = await db.raw<{ rows: { request_id: string; ts: Date }[] }>(
    `insert into ?? (${columnList}) select ${columnList} from json_populate_recordset(null::??, ?::json) ` +
      'on conflict (request_id, ts) do nothing returning request_id, ts',
    [table, table, JSON.stringify(records.map(toRow))],
  );
  return rows;
}

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
      for (const row of await insertAuditRows(trx, unique.slice(i, i + ROWS_PER_STATEMENT))) {
        const record = byKey.get(`${row.request_id}\u0000${new Date(row.ts).toISOString()}`);
        if (record) inserted.push(record);
      }
    }
    await addToRollup(trx, inserted);
    if (onBatch && inserted.length > 0) await onBatch(trx, inserted);
    return { inserted: inserted.length, skipped: records.length - inserted.length };
  });
}
