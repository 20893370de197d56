import type { Knex } from 'knex';
import type { AuditRecord } from './record.js';
import { AUDIT_TABLE, fromRow, type AuditRow } from './rows.js';
import { isCanonicalInstant } from '../time/calendar.js';

/** One page of a key's audit log, newest first; `nextCursor` is null on the last page. */
export interface AuditPage {
  data: AuditRecord[];
  nextCursor: string | null;
}

/** A page request: time range [from, to) and a cursor from the previous page. */
export interface AuditQuery {
  from?: Date;
  to?: Date;
  /** Records per page, 1..AUDIT_PAGE_MAX. */
  limit: number;
  cursor?: string;
}

/** Usage sums of a key over a time range. */
export interface AuditTotals {
  requests: number;
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
}

/** Largest page listForKey serves. */
export const AUDIT_PAGE_MAX = 1000;

/** A cursor that this repository did not produce (tampered, truncated, another API's): the API answers 400. */
export class InvalidAuditCursorError extends Error {
  override readonly name = 'InvalidAuditCursorError';
  constructor() {
    super('the audit cursor is malformed; pass back next_cursor exactly as a previous page returned it');
  }
}

interface CursorPosition {
  ts: string;
  requestId: string;
}

/** Opaque cursor: base64url of the last row's [timestamp, request_id], the keyset the query orders by. */
export function encodeAuditCursor(position: CursorPosition): string {
  return Buffer.from(JSON.stringify([position.ts, position.requestId])).toString('base64url');
}

/** Reads a cursor back; throws InvalidAuditCursorError for anything encodeAuditCursor cannot have made. */
export function decodeAuditCursor(cursor: string): CursorPosition {
  let value: unknown;
  try {
    if (!/^[A-Za-z0-9_-]+$/.test(cursor)) throw new Error('not base64url');
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw new InvalidAuditCursorError();
  }
  if (!Array.isArray(value) || value.length !== 2) throw new InvalidAuditCursorError();
  const [ts, requestId] = value as unknown[];
  // Request ids are the gateway's own (req_ + hex) or a client's x-request-id: printable ASCII, never NUL.
  if (typeof ts !== 'string' || typeof requestId !== 'string' || !/^[\x20-\x7e]{1,200}$/.test(requestId))
    throw new InvalidAuditCursorError();
  // Only the canonical form: rules out dates PostgreSQL and JavaScript would read differently.
  if (!isCanonicalInstant(ts)) throw new InvalidAuditCursorError();
  return { ts, requestId };
}

/** Reads the audit log for the Management API and the portal. */
export class AuditRepository {
  constructor(private readonly knex: Knex) {}

  /**
   * A key's records newest first, by keyset pagination on (ts, request_id): stable while new
   * rows arrive (they sort before the cursor) and as fast on page 1,000 as on page 1.
   */
  async listForKey(keyId: string, query: AuditQuery): Promise<AuditPage> {
    if (!Number.isInteger(query.limit) || query.limit < 1 || query.limit > AUDIT_PAGE_MAX) {
      throw new RangeError(`limit must be an integer from 1 to ${AUDIT_PAGE_MAX}`);
    }
    const after = query.cursor === undefined ? undefined : decodeAuditCursor(query.cursor);
    const q = this.knex<AuditRow>(AUDIT_TABLE).where('key_id', keyId);
    if (query.from) q.where('ts', '>=', query.from.toISOString());
    if (query.to) q.where('ts', '<', query.to.toISOString());
    if (after) q.whereRaw('(ts, request_id) < (?::timestamptz, ?)', [after.ts, after.requestId]);
    const rows: AuditRow[] = await q
      .select('*')
      .orderBy([
        { column: 'ts', order: 'desc' },
        { column: 'request_id', order: 'desc' },
      ])
      .limit(query.limit + 1);
    const data = rows.slice(0, query.limit).map(fromRow);
    const last = data.at(-1);
    const nextCursor = rows.length > query.limit && last ? encodeAuditCursor({ ts: last.timestamp, requestId: last.requestId }) : null;
    return { data, nextCursor };
  }

  /** Request count, tokens and cost of a key over [from, to). */
  async totalsForKey(keyId: string, from: Date, to: Date): Promise<AuditTotals> {
    const rows: { requests: string | number; input_tokens: string | null; output_tokens: string | null; cost_usd: string | null }[] =
      await this.knex(AUDIT_TABLE)
        .where('key_id', keyId)
        .where('ts', '>=', from.toISOString())
        .where('ts', '<', to.toISOString())
        .select(
          this.knex.raw('count(*) as requests'),
          this.knex.raw('sum(input_tokens) as input_tokens'),
          this.knex.raw('sum(output_tokens) as output_tokens'),
          this.knex.raw('sum(cost_usd) as cost_usd'),
        );
    const row = rows[0];
    return {
      requests: Number(row?.requests ?? 0),
      inputTokens: Number(row?.input_tokens ?? 0),
      outputTokens: Number(row?.output_tokens ?? 0),
      costUsd: Number(row?.cost_usd ?? 0),
    };
  }
}
