import { fromStoredAttempt, toStoredAttempt, type StoredAttempt } from './attempt-rows.js';
import type { AuditAttempt, AuditRecord } from './record.js';

/** The audit log table; see core/db/migrations/002_audit_log.ts. */
export const AUDIT_TABLE = 'audit_log';

/** A row as knex writes it (jsonb as a JSON string: `pg` would send a JS array as a PostgreSQL array). */
export interface AuditRowInsert {
  request_id: string;
  ts: string;
  key_id: string;
  payer_id: string | null;
  interface: string;
  model: string | null;
  supplier: string | null;
  region: string | null;
  input_tokens: number;
  output_tokens: number;
  cached_input_tokens: number;
  cost_usd: string;
  latency_ms: number;
  status: number;
  code: string | null;
  failover: boolean;
  attempts: string;
  session: string | null;
  auto_routed: boolean;
}

/** A row as `pg` reads it back: numeric as a string, timestamptz as a Date, jsonb parsed. */
export interface AuditRow extends Omit<AuditRowInsert, 'ts' | 'attempts'> {
  ts: Date;
  /** snake_case since migration 009; camelCase in rows an older replica may still write. */
  attempts: (StoredAttempt | AuditAttempt)[];
}

/** The record as a row to insert; cost goes as a decimal string so no float reaches numeric. */
export function toRow(record: AuditRecord): AuditRowInsert {
  return {
    request_id: record.requestId,
    ts: record.timestamp,
    key_id: record.keyId,
    payer_id: record.payerId,
    interface: record.interface,
    model: record.model,
    supplier: record.supplier,
    region: record.region,
    input_tokens: record.inputTokens,
    output_tokens: record.outputTokens,
    cached_input_tokens: record.cachedInputTokens,
    cost_usd: record.costUsd.toFixed(9),
    latency_ms: record.latencyMs,
    status: record.status,
    code: record.code,
    failover: record.failover,
    attempts: JSON.stringify(record.attempts.map(toStoredAttempt)),
    session: record.session,
    auto_routed: record.autoRouted === true,
  };
}

/** A stored row as the record the gateway appended. */
export function fromRow(row: AuditRow): AuditRecord {
  return {
    requestId: row.request_id,
    timestamp: new Date(row.ts).toISOString(),
    keyId: row.key_id,
    payerId: row.payer_id,
    interface: row.interface,
    model: row.model,
    supplier: row.supplier,
    region: row.region,
    inputTokens: row.input_tokens,
    outputTokens: row.output_tokens,
    cachedInputTokens: row.cached_input_tokens,
    costUsd: Number(row.cost_usd),
    latencyMs: row.latency_ms,
    status: row.status,
    code: row.code,
    failover: row.failover,
    attempts: row.attempts.map(fromStoredAttempt),
    session: row.session,
    ...(row.auto_routed && { autoRouted: true }),
  };
}
