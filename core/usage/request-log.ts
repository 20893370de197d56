// The dashboard's request log (docs/portal.md "Dashboard: request log"): the audit log's rows for
// the keys a user may see, filtered and paged newest first by (ts, gateway request id: the primary key), one request with
// its attempts, and the filtered rows in pages for a streamed export. Scope is part of every
// query (core/usage/scope.ts): a request outside it is simply not found.
import type { Knex } from 'knex';
import { fromStoredAttempt, toStoredAttempt, type StoredAttempt } from '../audit/attempt-rows.js';
import { AUDIT_TABLE, type AuditRow } from '../audit/rows.js';
import { keysInScope, type KeyScope } from './scope.js';
import { isCanonicalInstant } from '../time/calendar.js';

/** Filters of the log; every one optional. */
export interface RequestLogFilters {
  /** The portal's integer key id. */
  keyNumber?: number;
  model?: string;
  supplier?: string;
  /** An HTTP status, or a class: 2 = 2xx, 4 = 4xx, 5 = 5xx. */
  status?: number;
  code?: string;
  from?: Date;
  to?: Date;
  /** Only the requests of this conversation (the gateway's session id). */
  session?: string;
}

/** One request as the dashboard shows it. */
export interface RequestLogEntry {
  /** The portal's integer id of the row (audit_log.seq): `/dashboard/request-log/{request_id}`. */
  request_id: number;
  /** The gateway's request id (the X-Request-Id the caller saw). */
  gateway_request_id: string;
  ts: string;
  key_id: number | null;
  key_name: string | null;
  interface: string;
  model: string | null;
  supplier: string | null;
  region: string | null;
  status: number;
  code: string | null;
  input_tokens: number;
  output_tokens: number;
  cached_input_tokens: number;
  /** Input tokens written to the supplier's prompt cache (part of input_tokens). */
  cache_write_input_tokens: number;
  cost_usd: number;
  latency_ms: number;
  failover: boolean;
  attempts: StoredAttempt[];
  session: string | null;
}

/** Thrown for a cursor list() did not produce. */
export class InvalidLogCursorError extends Error {}

const encodeCursor = (ts: Date, requestId: string) => Buffer.from(JSON.stringify([ts.toISOString(), requestId])).toString('base64url');

/** A cursor's request id as the gateway makes them: short text, no NUL (which PostgreSQL cannot compare). */
const isCursorRequestId = (id: string) => id.length > 0 && id.length <= 200 && !id.includes('\u0000');

function decodeCursor(cursor: string): [string, string] {
  try {
    const value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(value) && value.length === 2 && typeof value[1] === 'string' && isCursorRequestId(value[1])) {
      // Only the exact instant form encodeCursor writes, from the years a row can carry: a cursor
      // this log issued names one of its rows ("1" or "2026-02-30" are not rolled into other dates).
      if (typeof value[0] === 'string' && isCanonicalInstant(value[0]) && value[0] >= '2000') return [value[0], value[1]];
    }
  } catch {
    // fall through
  }
  throw new InvalidLogCursorError('not a cursor of this log');
}

type Row = AuditRow & { seq: string | number; key_number: number | null; key_name: string | null };

function present(row: Row): RequestLogEntry {
  return {
    request_id: Number(row.seq),
    gateway_request_id: row.request_id,
    ts: new Date(row.ts).toISOString(),
    key_id: row.key_number === null ? null : Number(row.key_number),
    key_name: row.key_name,
    interface: row.interface,
    model: row.model,
    supplier: row.supplier,
    region: row.region,
    status: row.status,
    code: row.code,
    input_tokens: row.input_tokens,
    output_tokens: row.output_tokens,
    cached_input_tokens: row.cached_input_tokens,
    cache_write_input_tokens: row.cache_write_input_tokens,
    cost_usd: Number(row.cost_usd),
    latency_ms: row.latency_ms,
    failover: row.failover,
    attempts: (row.attempts ?? []).map((a) => toStoredAttempt(fromStoredAttempt(a))),
    session: row.session,
  };
}

function baseQuery(knex: Knex, scope: KeyScope): Knex.QueryBuilder {
  return knex(`${AUDIT_TABLE} as a`)
    .leftJoin('api_keys as k', 'k.id', 'a.key_id')
    .whereIn('a.key_id', keysInScope(knex, scope))
    .select('a.*', 'k.number as key_number', 'k.name as key_name');
}

function filtered(knex: Knex, scope: KeyScope, f: RequestLogFilters): Knex.QueryBuilder {
  let q = baseQuery(knex, scope);
  if (f.keyNumber !== undefined) q = q.where('k.number', f.keyNumber);
  return rowFilters(q, f);
}

/** The filters on the audit row itself (`a`), all but the key's. */
function rowFilters(q: Knex.QueryBuilder, f: RequestLogFilters): Knex.QueryBuilder {
  if (f.model !== undefined) q = q.where('a.model', f.model);
  if (f.supplier !== undefined) q = q.where('a.supplier', f.supplier);
  if (f.status !== undefined)
    q = f.status < 10 ? q.whereBetween('a.status', [f.status * 100, f.status * 100 + 99]) : q.where('a.status', f.status);
  if (f.code !== undefined) q = q.where('a.code', f.code);
  if (f.session !== undefined) q = q.where('a.session', f.session);
  if (f.from) q = q.where('a.ts', '>=', f.from.toISOString());
  if (f.to) q = q.where('a.ts', '<', f.to.toISOString());
  return q;
}

/**
 * Scopes of at most this many keys are paged key by key (each key's newest rows through its own
 * index, merged): with more, the scope is a large part of the log and the time index serves it.
 */
const perKeyPagingMaxKeys = 32;

/**
 * The keys a page reads, when few enough to page key by key: a scope of many keys (or every
 * key) is undefined. PostgreSQL cannot read several keys' rows from the (key_id, ts, request_id)
 * index in time order at once, so for a scope of a few keys it read every row of the period and
 * sorted them for each page — an export of 200,000 rows re-sorted what remained on each of its
 * 100 pages. One index range per key, each at most a page long, keeps a page's cost to its size.
 */
async function fewKeysOf(knex: Knex, scope: KeyScope, f: RequestLogFilters): Promise<string[] | undefined> {
  let keys = keysInScope(knex, scope);
  if (f.keyNumber !== undefined) keys = keys.where({ number: f.keyNumber });
  const ids = (await keys.limit(perKeyPagingMaxKeys + 1).pluck('id')) as string[];
  return ids.length <= perKeyPagingMaxKeys ? ids : undefined;
}

/** Rows after the cursor, newest first (a row comparison: the indexes walk straight to it). */
function afterCursor(q: Knex.QueryBuilder, cursor: [string, string] | undefined): Knex.QueryBuilder {
  if (!cursor) return q;
  const [ts, id] = cursor;
  return q.where('a.ts', '<=', ts).whereRaw('(a.ts, a.request_id) < (?::timestamptz, ?)', [ts, id]);
}

/** One page, newest first; `next` continues it (null on the last page). */
export async function listRequests(
  knex: Knex,
  scope: KeyScope,
  filters: RequestLogFilters,
  page: { limit: number; cursor?: string },
): Promise<{ data: RequestLogEntry[]; next: string | null }> {
  return readPage(knex, scope, filters, page, await fewKeysOf(knex, scope, filters));
}

/** A page, with the scope's keys already resolved (fewKeysOf): an export resolves them once. */
async function readPage(
  knex: Knex,
  scope: KeyScope,
  filters: RequestLogFilters,
  page: { limit: number; cursor?: string },
  keys: string[] | undefined,
): Promise<{ data: RequestLogEntry[]; next: string | null }> {
  const cursor = page.cursor ? decodeCursor(page.cursor) : undefined;
  let rows: Row[];
  if (keys === undefined) {
    rows = (await afterCursor(filtered(knex, scope, filters), cursor)
      .orderBy('a.ts', 'desc')
      .orderBy('a.request_id', 'desc')
      .limit(page.limit + 1)) as Row[];
  } else if (keys.length === 0) {
    rows = [];
  } else {
    const perKey = keys.map((key) =>
      afterCursor(rowFilters(knex(`${AUDIT_TABLE} as a`).where('a.key_id', key), filters), cursor)
        .select('a.*')
        .orderBy('a.ts', 'desc')
        .orderBy('a.request_id', 'desc')
        .limit(page.limit + 1),
    );
    rows = (await knex
      .select('a.*', 'k.number as key_number', 'k.name as key_name')
      .from(knex.unionAll(perKey, true).as('a'))
      .leftJoin('api_keys as k', 'k.id', 'a.key_id')
      .orderBy('a.ts', 'desc')
      .orderBy('a.request_id', 'desc')
      .limit(page.limit + 1)) as Row[];
  }
  const more = rows.length > page.limit;
  const shown = rows.slice(0, page.limit);
  const last = shown.at(-1);
  return { data: shown.map(present), next: more && last ? encodeCursor(new Date(last.ts), last.request_id) : null };
}

/** How many requests `filters` select (an export's progress is counted against it). */
export async function countRequests(knex: Knex, scope: KeyScope, filters: RequestLogFilters): Promise<number> {
  const row = (await filtered(knex, scope, filters).clearSelect().count({ n: '*' }).first()) as { n: string | number } | undefined;
  return Number(row?.n ?? 0);
}

/** The rows of `filters` in pages of `batch` (for a streamed export: memory stays flat). */
export async function* eachRequest(knex: Knex, scope: KeyScope, filters: RequestLogFilters, batch = 1000): AsyncGenerator<RequestLogEntry> {
  const keys = await fewKeysOf(knex, scope, filters);
  let cursor: string | undefined;
  do {
    const page = await readPage(knex, scope, filters, { limit: batch, cursor }, keys);
    yield* page.data;
    cursor = page.next ?? undefined;
  } while (cursor);
}

/** One request by its integer id within the scope, or undefined (also when it exists outside the scope). */
export async function findRequest(knex: Knex, scope: KeyScope, id: number): Promise<RequestLogEntry | undefined> {
  const row = (await baseQuery(knex, scope).where('a.seq', id).first()) as Row | undefined;
  return row ? present(row) : undefined;
}

/** The columns of a request in CSV exports (the request log's export and request-log reports). */
export const requestLogCsvHeader = [
  'request_id',
  'gateway_request_id',
  'ts',
  'key_id',
  'key_name',
  'interface',
  'model',
  'supplier',
  'region',
  'status',
  'code',
  'input_tokens',
  'output_tokens',
  'cached_input_tokens',
  'cost_usd',
  'latency_ms',
  'failover',
  'attempts',
  // After the columns exports had before it, so a script reading by position still works.
  'cache_write_input_tokens',
] as const;

/** One request's cells in `requestLogCsvHeader` order (the cost as its 9-decimal text, attempts counted). */
export function requestLogCsvCells(e: RequestLogEntry): (string | number | boolean | null)[] {
  return [
    e.request_id,
    e.gateway_request_id,
    e.ts,
    e.key_id,
    e.key_name,
    e.interface,
    e.model,
    e.supplier,
    e.region,
    e.status,
    e.code,
    e.input_tokens,
    e.output_tokens,
    e.cached_input_tokens,
    e.cost_usd.toFixed(9),
    e.latency_ms,
    e.failover,
    e.attempts.length,
    e.cache_write_input_tokens,
  ];
}
