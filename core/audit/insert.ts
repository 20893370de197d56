import type { Knex } from 'knex';
import { addToRollup } from '../usage/rollup.js';
import type { AuditRecord } from './record.js';
import { AUDIT_TABLE, toRow, type AuditRowInsert } from './rows.js';

/** Rows per INSERT statement: bounds one statement's size; a batch is usually far smaller. */
const ROWS_PER_STATEMENT = 1000;

/** The audit_log columns an insert fills, with the PostgreSQL type each one's array is cast to. */
const COLUMNS: readonly [keyof AuditRowInsert, string][] = [
  ['request_id', 'text'],
  ['ts', 'timestamptz'],
  ['key_id', 'text'],
  ['payer_id', 'text'],
  ['interface', 'text'],
  ['model', 'text'],
  ['supplier', 'text'],
  ['region', 'text'],
  ['input_tokens', 'integer'],
  ['output_tokens', 'integer'],
  ['cached_input_tokens', 'integer'],
  ['cost_usd', 'numeric'],
  ['latency_ms', 'integer'],
  ['status', 'integer'],
  ['code', 'text'],
  ['failover', 'boolean'],
  ['attempts', 'jsonb'],
  ['session', 'text'],
  ['auto_routed', 'boolean'],
];

/**
 * One parameter per column (an array of that column's values, unnested into rows) instead of
 * one per value: the statement text is the same for every batch and the driver binds 19 arrays
 * rather than thousands of values, which is what the writer spent most of its time on. Rows
 * already present (a batch retried after it committed) are skipped by the primary key.
 */
const INSERT_SQL = `insert into ${AUDIT_TABLE} (${COLUMNS.map(([name]) => name).join(', ')})
  select * from unnest(${COLUMNS.map(([, type]) => `?::${type}[]`).join(', ')})
  on conflict (request_id, ts) do nothing
  returning request_id, ts`;

/** The rows as one array per column, in COLUMNS order. */
function columnArrays(rows: readonly AuditRowInsert[]): Knex.Value[] {
  // `pg` sends a JS array as one PostgreSQL array (knex.raw does not expand it).
  return COLUMNS.map(([name]) => rows.map((row) => row[name]) as Knex.Value);
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
      const result = await trx.raw<{ rows: { request_id: string; ts: Date }[] }>(
        INSERT_SQL,
        columnArrays(unique.slice(i, i + ROWS_PER_STATEMENT).map(toRow)),
      );
      for (const row of result.rows) {
        const record = byKey.get(`${row.request_id}\u0000${new Date(row.ts).toISOString()}`);
        if (record) inserted.push(record);
      }
    }
    await addToRollup(trx, inserted);
    if (onBatch && inserted.length > 0) await onBatch(trx, inserted);
    return { inserted: inserted.length, skipped: records.length - inserted.length };
  });
}
