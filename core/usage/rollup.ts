// The hourly usage rollup (migration 012_usage_rollups): what the audit writer adds, in the same
// transaction, for the records a batch actually inserted. Costs are summed in integer nano-USD
// (the audit log's unit), so the rollup equals the sum of the audit rows to the nano-dollar.
import type { Knex } from 'knex';
import type { AuditRecord } from '../audit/record.js';
import { toNano } from '../budget/usage.js';

export const USAGE_TABLE = 'usage_hourly';

const hourMs = 3_600_000;

interface RollupRow {
  key_id: string;
  hour: string;
  model: string;
  supplier: string;
  requests: number;
  errors: number;
  input_tokens: number;
  output_tokens: number;
  cached_input_tokens: number;
  costNano: number;
  latency_ms_sum: number;
}

/** The records grouped by key, UTC hour, model and supplier, in primary-key order. */
export function rollupRows(records: readonly AuditRecord[]): RollupRow[] {
  const groups = new Map<string, RollupRow>();
  for (const r of records) {
    const hour = new Date(Math.floor(Date.parse(r.timestamp) / hourMs) * hourMs).toISOString();
    const model = r.model ?? '';
    const supplier = r.supplier ?? '';
    const id = [r.keyId, hour, model, supplier].join('\u0000');
    let row = groups.get(id);
    if (!row) {
      row = {
        key_id: r.keyId,
        hour,
        model,
        supplier,
        requests: 0,
        errors: 0,
        input_tokens: 0,
        output_tokens: 0,
        cached_input_tokens: 0,
        costNano: 0,
        latency_ms_sum: 0,
      };
      groups.set(id, row);
    }
    row.requests += 1;
    if (r.status >= 400) row.errors += 1;
    row.input_tokens += r.inputTokens;
    row.output_tokens += r.outputTokens;
    row.cached_input_tokens += r.cachedInputTokens;
    row.costNano += toNano(r.costUsd);
    row.latency_ms_sum += r.latencyMs;
  }
  // One order for every writer, so two writers upserting overlapping rows never deadlock.
  return [...groups.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, row]) => row);
}

/** Nano-USD as the exact 9-decimal string PostgreSQL's numeric takes. */
function nanoDecimal(nano: number): string {
  const sign = nano < 0 ? '-' : '';
  const abs = Math.abs(nano);
  return `${sign}${Math.trunc(abs / 1e9)}.${String(abs % 1e9).padStart(9, '0')}`;
}

/** Adds `records` to the rollup inside `trx` (the transaction that inserted them). */
export async function addToRollup(trx: Knex.Transaction, records: readonly AuditRecord[]): Promise<void> {
  const rows = rollupRows(records);
  if (rows.length === 0) return;
  await trx(USAGE_TABLE)
    .insert(rows.map(({ costNano, ...row }) => ({ ...row, cost_usd: nanoDecimal(costNano) })))
    .onConflict(['key_id', 'hour', 'model', 'supplier'])
    .merge({
      requests: trx.raw(`${USAGE_TABLE}.requests + excluded.requests`),
      errors: trx.raw(`${USAGE_TABLE}.errors + excluded.errors`),
      input_tokens: trx.raw(`${USAGE_TABLE}.input_tokens + excluded.input_tokens`),
      output_tokens: trx.raw(`${USAGE_TABLE}.output_tokens + excluded.output_tokens`),
      cached_input_tokens: trx.raw(`${USAGE_TABLE}.cached_input_tokens + excluded.cached_input_tokens`),
      cost_usd: trx.raw(`${USAGE_TABLE}.cost_usd + excluded.cost_usd`),
      latency_ms_sum: trx.raw(`${USAGE_TABLE}.latency_ms_sum + excluded.latency_ms_sum`),
    });
}
