// The infrastructure token log (docs/routing.md "Credential pools"): what happened to each
// credential of a supplier's pool — sidelined because the supplier rate-limited or rejected it,
// back in service, or changed by an administrator. Gateways write events through
// CredentialEventWriter (batched, off the request path: an event never delays a request, and a
// database outage loses at most the bounded buffer, logged); administrators read them with
// `queryCredentialEvents` (`GET /api/admin/token-logs`).
import type { Knex } from 'knex';

/** What happened to a credential. */
export const credentialEventKinds = ['rate_limited', 'auth_failure', 'recovered', 'rotated'] as const;
export type CredentialEventKind = (typeof credentialEventKinds)[number];

/** Who recorded the event: a gateway replica serving requests, or an administrator's change. */
export type CredentialEventSource = 'gateway' | 'admin';

export interface CredentialEvent {
  at: Date;
  provider: string;
  keyName: string;
  kind: CredentialEventKind;
  /** The error's catalogue code for failures (`rate_limit_exceeded`, `upstream_error`, a provider's own code). */
  errorKind?: string | undefined;
  upstreamStatus?: number | undefined;
  message?: string | undefined;
  source: CredentialEventSource;
  replica?: string | undefined;
  /** Until when the credential is out of rotation (failures). */
  sidelinedUntil?: Date | undefined;
}

const table = 'credential_events';

const toRow = (e: CredentialEvent) => ({
  at: e.at,
  provider: e.provider.slice(0, 63),
  key_name: e.keyName.slice(0, 63),
  kind: e.kind,
  error_kind: e.errorKind?.slice(0, 100) ?? null,
  upstream_status: e.upstreamStatus ?? null,
  message: e.message?.slice(0, 500) ?? null,
  source: e.source,
  replica: e.replica?.slice(0, 100) ?? null,
  sidelined_until: e.sidelinedUntil ?? null,
});

/** Writes events at once (an administrator's change, inside its own request). */
export async function recordCredentialEvents(knex: Knex, events: readonly CredentialEvent[]): Promise<void> {
  if (events.length > 0) await knex(table).insert(events.map(toRow));
}

/**
 * Buffers a gateway's events and writes them every `flushMs`. The buffer is bounded: past
 * `maxBuffered` the oldest are dropped and counted (a supplier rejecting every call for hours
 * must not grow the gateway's memory while the database is away).
 */
export class CredentialEventWriter {
  private buffer: CredentialEvent[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  dropped = 0;

  constructor(
    private readonly knex: Knex,
    private readonly options: { flushMs?: number; maxBuffered?: number; onError?: (error: unknown, pending: number) => void } = {},
  ) {}

  record(event: CredentialEvent): void {
    this.buffer.push(event);
    const max = this.options.maxBuffered ?? 1_000;
    if (this.buffer.length > max) {
      this.dropped += this.buffer.length - max;
      this.buffer.splice(0, this.buffer.length - max);
    }
    this.timer ??= setTimeout(() => void this.flush(), this.options.flushMs ?? 500);
    this.timer.unref();
  }

  /** Writes what is buffered; a failed write keeps the events for the next attempt. */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.flushing ??= (async () => {
      const batch = this.buffer;
      this.buffer = [];
      try {
        await recordCredentialEvents(this.knex, batch);
      } catch (error) {
        this.buffer = [...batch, ...this.buffer];
        this.options.onError?.(error, this.buffer.length);
        this.timer ??= setTimeout(() => void this.flush(), 5_000);
        this.timer.unref();
      }
    })().finally(() => {
      this.flushing = undefined;
      // Events recorded while this write was under way: their timer may have fired into it (and
      // found it running), so nothing else would write them until the next event came.
      if (this.buffer.length > 0 && this.timer === undefined) {
        this.timer = setTimeout(() => void this.flush(), this.options.flushMs ?? 500);
        this.timer.unref();
      }
    });
    return this.flushing;
  }

  /** Last write at shutdown. */
  async close(): Promise<void> {
    await this.flush();
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}

/** Filters of the token log (`/api/admin/token-logs`), with the seed's defaults. */
export interface CredentialEventQuery {
  provider?: string;
  keyName?: string;
  kinds?: readonly string[];
  /** Only events after this epoch-ms (0: no bound). */
  sinceMs: number;
  /** Only events of the last `windowHours` hours. */
  windowHours: number;
  source?: string;
  errorKind?: string;
  limit: number;
  offset: number;
}

/** An event as the API shows it. */
export interface CredentialEventView {
  id: number;
  at: string;
  at_ms: number;
  provider: string;
  key_name: string;
  kind: string;
  error_kind: string | null;
  upstream_status: number | null;
  message: string | null;
  source: string;
  replica: string | null;
  sidelined_until: string | null;
}

/** A page of events, newest first, with the total matching and the count per kind. */
export async function queryCredentialEvents(
  knex: Knex,
  query: CredentialEventQuery,
  now: Date,
): Promise<{ total: number; by_kind: Record<string, number>; data: CredentialEventView[] }> {
  const from = new Date(Math.max(now.getTime() - query.windowHours * 3_600_000, query.sinceMs > 0 ? query.sinceMs + 1 : 0));
  const filtered = () => {
    let q = knex(table).where('at', '>=', from);
    if (query.provider) q = q.where({ provider: query.provider });
    if (query.keyName) q = q.where({ key_name: query.keyName });
    if (query.kinds && query.kinds.length > 0) q = q.whereIn('kind', [...query.kinds]);
    if (query.source) q = q.where({ source: query.source });
    if (query.errorKind) q = q.where({ error_kind: query.errorKind });
    return q;
  };
  const [rows, counts] = await Promise.all([
    filtered()
      .orderBy([
        { column: 'at', order: 'desc' },
        { column: 'id', order: 'desc' },
      ])
      .limit(query.limit)
      .offset(query.offset),
    filtered().groupBy('kind').select('kind').count({ n: '*' }),
  ]);
  const byKind = Object.fromEntries((counts as { kind: string; n: string | number }[]).map((c) => [c.kind, Number(c.n)]));
  return {
    total: Object.values(byKind).reduce((a, b) => a + b, 0),
    by_kind: byKind,
    data: (rows as Record<string, unknown>[]).map((r) => {
      const at = new Date(r.at as string);
      return {
        id: Number(r.id),
        at: at.toISOString(),
        at_ms: at.getTime(),
        provider: r.provider as string,
        key_name: r.key_name as string,
        kind: r.kind as string,
        error_kind: (r.error_kind as string | null) ?? null,
        upstream_status: r.upstream_status === null ? null : Number(r.upstream_status),
        message: (r.message as string | null) ?? null,
        source: r.source as string,
        replica: (r.replica as string | null) ?? null,
        sidelined_until: r.sidelined_until ? new Date(r.sidelined_until as string).toISOString() : null,
      };
    }),
  };
}
