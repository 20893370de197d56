import { fromStoredAttempt, toStoredAttempt, type StoredAttempt } from './attempt-rows.js';
import { isWellFormed, toWellFormed } from '../text/well-formed.js';
import type { AuditAttempt, AuditRecord } from './record.js';

/** The audit log table; see core/db/migrations/002_audit_log.ts. */
export const AUDIT_TABLE = 'audit_log';

/**
 * A row as the writer sends it, inside one JSON document per statement (core/audit/insert.ts):
 * `attempts` is the stored array itself, which PostgreSQL takes into the jsonb column.
 */
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
  cache_write_input_tokens: number;
  cost_usd: string;
  latency_ms: number;
  status: number;
  code: string | null;
  failover: boolean;
  attempts: StoredAttempt[];
  session: string | null;
  auto_routed: boolean;
}

/** The columns the writer fills, in AuditRowInsert's order; the others take their defaults. */
export const AUDIT_INSERT_COLUMNS = [
  'request_id',
  'ts',
  'key_id',
  'payer_id',
  'interface',
  'model',
  'supplier',
  'region',
  'input_tokens',
  'output_tokens',
  'cached_input_tokens',
  'cache_write_input_tokens',
  'cost_usd',
  'latency_ms',
  'status',
  'code',
  'failover',
  'attempts',
  'session',
  'auto_routed',
] as const satisfies readonly (keyof AuditRowInsert)[];

/** A row as `pg` reads it back: numeric as a string, timestamptz as a Date, jsonb parsed. */
export interface AuditRow extends Omit<AuditRowInsert, 'ts' | 'attempts'> {
  ts: Date;
  /** snake_case since migration 009; camelCase in rows an older replica may still write. */
  attempts: (StoredAttempt | AuditAttempt)[];
}

/**
 * Text a PostgreSQL text column can hold. A client chooses some of a record's text (its session
 * id): half a surrogate pair, which PostgreSQL's JSON parser refuses, becomes U+FFFD (what the
 * UTF-8 encoding of such text gives), and NUL, which no text value can hold, is dropped as
 * parseAuditRecord drops it from stream entries. Such a request keeps its audit row instead of
 * sending its batch to the dead-letter stream.
 */
function storable<T extends string | null>(text: T): T {
  if (text === null) return text;
  let result: string = text;
  if (result.includes('\u0000')) result = result.replaceAll('\u0000', '');
  if (!isWellFormed(result)) result = toWellFormed(result);
  return result as T;
}

/** The record as a row to insert; cost goes as a decimal string so no float reaches numeric. */
export function toRow(record: AuditRecord): AuditRowInsert {
  return {
    // Ids are the gateway's own; the batch finds its inserted rows again by request id.
    request_id: record.requestId,
    ts: record.timestamp,
    key_id: record.keyId,
    payer_id: storable(record.payerId),
    interface: storable(record.interface),
    model: storable(record.model),
    supplier: storable(record.supplier),
    region: storable(record.region),
    input_tokens: record.inputTokens,
    output_tokens: record.outputTokens,
    cached_input_tokens: record.cachedInputTokens,
    cache_write_input_tokens: record.cacheWriteInputTokens,
    cost_usd: record.costUsd.toFixed(9),
    latency_ms: record.latencyMs,
    status: record.status,
    code: storable(record.code),
    failover: record.failover,
    attempts: record.attempts.map(toStoredAttempt),
    session: storable(record.session),
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
    cacheWriteInputTokens: row.cache_write_input_tokens,
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
