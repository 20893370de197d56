/** One supplier attempt of a request, as the gateway's failover loop records it. */
export interface AuditAttempt {
  supplier: string;
  region: string;
  /** Epoch ms when the request to the supplier was sent. */
  startedAt: number;
  latencyMs: number;
  outcome: 'ok' | 'failed';
  status: number;
  code?: string | undefined;
  /** For attempts after the first: ms from the previous failure to this attempt being sent. */
  selectionMs?: number | undefined;
  /** The name (never the key) of the supplier credential used, for a supplier with a credential pool. */
  credential?: string | undefined;
}

/** The audit record of one gateway request: what the audit log stores and the Management API returns. */
export interface AuditRecord {
  requestId: string;
  /** ISO 8601 (UTC, millisecond precision) time the request was received. */
  timestamp: string;
  keyId: string;
  /** Wallet charged for the request; null when the caller pays outside the platform. */
  payerId: string | null;
  /** Which API the request came through: 'chat.completions', 'messages', 'responses', ... */
  interface: string;
  model: string | null;
  /** The supplier and region that answered (the last attempt); null when none was tried. */
  supplier: string | null;
  region: string | null;
  inputTokens: number;
  outputTokens: number;
  /** Input tokens served from the supplier's prompt cache (included in inputTokens). */
  cachedInputTokens: number;
  /**
   * Input tokens written to the supplier's prompt cache (included in inputTokens, priced at the
   * model's cache-write rate); 0 for suppliers that report none. Absent in records appended before
   * it was kept: read as 0.
   */
  cacheWriteInputTokens: number;
  /** Actual cost in USD, at most 9 decimals (the gateway rounds to 1e-9). */
  costUsd: number;
  latencyMs: number;
  /** HTTP status returned to the client. */
  status: number;
  /** Catalogue error code when the request failed. */
  code: string | null;
  failover: boolean;
  attempts: AuditAttempt[];
  session: string | null;
  /** True when the client asked for `auto` and the autorouter chose `model`; absent otherwise. */
  autoRouted?: boolean;
}

/** Thrown by parseAuditRecord: the entry can never be written, whatever the database does. */
export class AuditRecordError extends Error {
  override readonly name = 'AuditRecordError';
}

type Json = Record<string, unknown>;

const INT_MAX = 2_147_483_647; // the columns are PostgreSQL `integer`

function str(o: Json, key: string): string {
  const v = o[key];
  if (typeof v !== 'string' || v.length === 0) throw new AuditRecordError(`${key} must be a non-empty string`);
  return v;
}

function strOrNull(o: Json, key: string): string | null {
  const v = o[key];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string') throw new AuditRecordError(`${key} must be a string or null`);
  return v;
}

function int(o: Json, key: string, fallback?: number): number {
  const v = o[key] ?? fallback;
  // Rounded rather than rejected: a fractional latency must not turn a record into poison.
  const n = typeof v === 'number' ? Math.round(v) : NaN;
  if (!(n >= 0 && n <= INT_MAX)) throw new AuditRecordError(`${key} must be a number between 0 and ${INT_MAX}`);
  return n;
}

function attempt(v: unknown, index: number): AuditAttempt {
  if (typeof v !== 'object' || v === null) throw new AuditRecordError(`attempts[${index}] must be an object`);
  const o = v as Json;
  const outcome = o.outcome === 'ok' || o.outcome === 'failed' ? o.outcome : undefined;
  const numbers = [o.startedAt, o.latencyMs, o.status, o.selectionMs ?? 0];
  if (
    typeof o.supplier !== 'string' ||
    typeof o.region !== 'string' ||
    !outcome ||
    numbers.some((n) => typeof n !== 'number' || !Number.isFinite(n))
  ) {
    throw new AuditRecordError(`attempts[${index}] is not a supplier attempt`);
  }
  if (o.code !== undefined && o.code !== null && typeof o.code !== 'string')
    throw new AuditRecordError(`attempts[${index}].code must be a string`);
  const result: AuditAttempt = {
    supplier: o.supplier,
    region: o.region,
    startedAt: o.startedAt as number,
    latencyMs: o.latencyMs as number,
    outcome,
    status: o.status as number,
  };
  if (typeof o.code === 'string') result.code = o.code;
  if (typeof o.selectionMs === 'number') result.selectionMs = o.selectionMs;
  // A credential name is catalogue-validated text; anything else is dropped, never a poison record.
  if (typeof o.credential === 'string' && /^[a-z0-9][a-z0-9._-]{0,62}$/.test(o.credential)) result.credential = o.credential;
  return result;
}

/** Serialises a record for the stream: compact JSON, undefined attempt fields left out. */
export function serialiseAuditRecord(record: AuditRecord): string {
  return JSON.stringify(record);
}

/**
 * Parses and checks a stream entry's JSON. Everything PostgreSQL would reject (NUL characters,
 * non-integer tokens, a bad timestamp) is caught here, so a record that passes cannot fail the
 * batch insert and block the stream. Optional fields default, so records written by an older
 * or newer gateway during a rolling deploy still parse.
 */
export function parseAuditRecord(json: string): AuditRecord {
  let value: unknown;
  try {
    // PostgreSQL text and jsonb cannot hold U+0000; a client-supplied session id could. JSON
    // text can only carry it escaped, so the reviver (a callback per parsed value) runs only then.
    value = json.includes('\\u0000')
      ? JSON.parse(json, (_key, v: unknown) => (typeof v === 'string' ? v.replaceAll('\u0000', '') : v))
      : JSON.parse(json);
  } catch (error) {
    throw new AuditRecordError(`not JSON: ${(error as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new AuditRecordError('not a JSON object');
  const o = value as Json;
  const time = Date.parse(str(o, 'timestamp'));
  if (!Number.isFinite(time)) throw new AuditRecordError('timestamp must be an ISO 8601 date');
  const cost = o.costUsd === undefined ? 0 : o.costUsd; // null (NaN or Infinity serialised) is a bug, not free
  if (typeof cost !== 'number' || !Number.isFinite(cost) || cost < 0 || cost >= 1e9)
    throw new AuditRecordError('costUsd must be a number in [0, 1e9)');
  const rawAttempts = o.attempts ?? [];
  if (!Array.isArray(rawAttempts)) throw new AuditRecordError('attempts must be an array');
  const attempts = rawAttempts.map(attempt);
  return {
    requestId: str(o, 'requestId'),
    timestamp: new Date(time).toISOString(),
    keyId: str(o, 'keyId'),
    payerId: strOrNull(o, 'payerId'),
    interface: str(o, 'interface'),
    model: strOrNull(o, 'model'),
    supplier: strOrNull(o, 'supplier'),
    region: strOrNull(o, 'region'),
    inputTokens: int(o, 'inputTokens', 0),
    outputTokens: int(o, 'outputTokens', 0),
    cachedInputTokens: int(o, 'cachedInputTokens', 0),
    cacheWriteInputTokens: int(o, 'cacheWriteInputTokens', 0),
    costUsd: Math.round(cost * 1e9) / 1e9,
    latencyMs: int(o, 'latencyMs', 0),
    status: int(o, 'status'),
    code: strOrNull(o, 'code'),
    failover: typeof o.failover === 'boolean' ? o.failover : attempts.length > 1,
    attempts,
    session: strOrNull(o, 'session'),
    ...(o.autoRouted === true && { autoRouted: true }),
  };
}
