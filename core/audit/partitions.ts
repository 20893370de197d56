import type { Knex } from 'knex';
import { AUDIT_TABLE } from './rows.js';

/** The month partition holding a timestamp: its table name and [from, to) bounds in UTC. */
export function monthPartition(ts: Date): { name: string; from: string; to: string } {
  const year = ts.getUTCFullYear();
  const month = ts.getUTCMonth();
  return {
    name: `${AUDIT_TABLE}_${String(year).padStart(4, '0')}_${String(month + 1).padStart(2, '0')}`,
    from: new Date(Date.UTC(year, month, 1)).toISOString(),
    to: new Date(Date.UTC(year, month + 1, 1)).toISOString(),
  };
}

/** The two-character SQLSTATE class of a database error (e.g. '23' integrity, '08' connection), if it has one. */
export function sqlStateClass(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code.slice(0, 2) : undefined;
}

/** Logger shape shared by the audit writer's parts. */
export interface AuditLogger {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/**
 * Creates month partitions of the audit log on demand, once per month per process.
 * Every writer of every gateway may race to create the same month, so creation runs under a
 * transaction-scoped advisory lock (concurrent `CREATE TABLE IF NOT EXISTS` can still fail on
 * the catalogue's unique index). The month after a new one is created too, so the brief
 * exclusive lock creation takes on the parent happens ahead of the month boundary.
 */
export class AuditPartitions {
  private readonly known = new Set<string>();

  constructor(
    private readonly knex: Knex,
    private readonly logger: AuditLogger,
  ) {}

  /** Ensures the partitions for these ISO timestamps exist; throws only on transient errors. */
  async ensureFor(timestamps: readonly string[]): Promise<void> {
    const months = new Map<string, Date>();
    for (const ts of timestamps) {
      const date = new Date(ts);
      const first = new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1));
      months.set(first.toISOString(), first);
    }
    for (const first of months.values()) {
      const next = new Date(Date.UTC(first.getUTCFullYear(), first.getUTCMonth() + 1, 1));
      await this.ensure(first);
      await this.ensure(next);
    }
  }

  private async ensure(month: Date): Promise<void> {
    const part = monthPartition(month);
    if (this.known.has(part.name)) return;
    try {
      await this.knex.transaction(async (trx) => {
        await trx.raw('select pg_advisory_xact_lock(hashtext(?))', [`${AUDIT_TABLE} partitions`]);
        const found = await trx.raw<{ rows: { oid: string | null }[] }>('select to_regclass(?)::text as oid', [part.name]);
        if (found.rows[0]?.oid) return;
        await trx.raw(`create table if not exists ?? partition of ?? for values from ('${part.from}') to ('${part.to}')`, [
          part.name,
          AUDIT_TABLE,
        ]);
      });
    } catch (error) {
      // E.g. the default partition already holds rows of this month (23514) or the role may
      // not create tables (42501): the rows then stay in the default partition, which is
      // still the same table to every query. Only an outage is worth retrying.
      const cls = sqlStateClass(error);
      if (cls !== '22' && cls !== '23' && cls !== '42') throw error;
      this.logger.warn(
        { partition: part.name, err: (error as Error).message },
        'audit partition not created; rows go to the default partition',
      );
    }
    this.known.add(part.name);
  }
}
