import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, appendFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Knex } from 'knex';
import type { AuditBuffer } from './buffer.js';
import { insertAuditBatch } from './insert.js';
import { AuditPartitions, sqlStateClass, type AuditLogger } from './partitions.js';
import { parseAuditRecord, serialiseAuditRecord, type AuditRecord } from './record.js';
import { AUDIT_TABLE } from './rows.js';

/** Options of the audit journal. */
export interface AuditJournalOptions {
  /** Directory of the spill files (SVC_DATA_DIR/audit-spill). */
  spillDir: string;
  /** A record not confirmed in PostgreSQL this long after its append is checked (and written if missing). */
  confirmAfterMs?: number;
  /** How often unconfirmed records are checked. */
  checkEveryMs?: number;
  /** Work in the transaction of a direct write, as the writer does it (wallet debits). */
  onBatch?: (trx: Knex.Transaction, records: AuditRecord[]) => Promise<void>;
  logger: AuditLogger;
  clock?: () => number;
}

/** What a record not yet known to be in PostgreSQL still counts for: its spend, by key, payer and time. */
export type UnconfirmedSpend = Readonly<Pick<AuditRecord, 'requestId' | 'keyId' | 'payerId' | 'timestamp' | 'costUsd'>>;

interface Pending extends UnconfirmedSpend {
  /**
   * The whole record as the stream holds it (serialiseAuditRecord), parsed again only when it is
   * overdue and written from here. One flat string beside the few fields budget and wallet
   * rebuilds read, rather than the record's object graph: every record lives here until its
   * batch commits, through a scavenge or two, and those graphs were what the scavenger copied
   * and promoted (bench/RESULTS.md).
   */
  json: string;
  appendedAt: number;
  /** In the spill file: the stream append failed. */
  spilled: boolean;
}

function pendingOf(record: AuditRecord, json: string, appendedAt: number, spilled: boolean): Pending {
  const { requestId, keyId, payerId, timestamp, costUsd } = record;
  return { requestId, keyId, payerId, timestamp, costUsd, json, appendedAt, spilled };
}

/** True when a spill file's name carries the pid of another process that is still running. */
function ownedByLiveSibling(name: string): boolean {
  const pid = Number(/^audit-spill-(\d+)-/.exec(name)?.[1]);
  if (!Number.isSafeInteger(pid) || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: alive but someone else's; ESRCH: gone.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Records per look-up and per direct write. */
const chunk = 500;
const spillPrefix = 'audit-spill-';

/**
 * The request path's side of the audit log, which never drops a record. Each record goes to
 * the durable stream (AuditBuffer) and is also remembered here until it is known to be in
 * PostgreSQL — confirmed by this process's writer, or looked up after `confirmAfterMs`. A record
 * the stream refused (store unreachable) is written to a local spill file at once; a record the
 * stream accepted but lost (store restarted empty) is simply not found when looked up. Either
 * way it is written to PostgreSQL directly, with its wallet debit, idempotently (the table's
 * unique key and the ledger's unique request id): a record written twice is written once.
 *
 * Spill files outlive the process: at start, a journal adopts every spill file in the
 * directory (renaming it first, so two processes never replay the same file).
 */
export class AuditJournal {
  private readonly pending = new Map<string, Pending>();
  private readonly confirmAfterMs: number;
  private readonly clock: () => number;
  private readonly spillFile: string;
  private readonly partitions: AuditPartitions;
  private timer: NodeJS.Timeout | undefined;
  private checking: Promise<void> | undefined;
  private spillWrites: Promise<void> = Promise.resolve();
  private counters = { spilled: 0, rewritten: 0 };

  constructor(
    private readonly buffer: AuditBuffer,
    private readonly knex: Knex,
    private readonly options: AuditJournalOptions,
  ) {
    this.confirmAfterMs = options.confirmAfterMs ?? 5_000;
    this.clock = options.clock ?? Date.now;
    this.spillFile = join(options.spillDir, `${spillPrefix}${process.pid}-${randomBytes(4).toString('hex')}.jsonl`);
    this.partitions = new AuditPartitions(knex, options.logger);
  }

  /** Adopts spill files left by earlier processes and starts the periodic check. */
  async start(): Promise<void> {
    await mkdir(this.options.spillDir, { recursive: true });
    for (const name of await readdir(this.options.spillDir)) {
      if (!name.startsWith(spillPrefix) || !name.endsWith('.jsonl')) continue;
      // A file of another live process on this host (a sibling SVC_WORKERS process) is still
      // being written: it is that process's to replay, or the next start's once it has exited.
      if (ownedByLiveSibling(name)) continue;
      const claimed = join(this.options.spillDir, `${name}.adopted-${randomBytes(4).toString('hex')}`);
      try {
        await rename(join(this.options.spillDir, name), claimed);
      } catch {
        continue; // another process adopted it first
      }
      for (const line of (await readFile(claimed, 'utf8')).split('\n')) {
        if (line.trim() === '') continue;
        const record = parseAuditRecord(line);
        this.pending.set(record.requestId, pendingOf(record, serialiseAuditRecord(record), 0, true));
      }
      await this.rewriteSpill();
      await rm(claimed, { force: true });
    }
    this.timer = setInterval(() => void this.check().catch(() => undefined), this.options.checkEveryMs ?? 1_000);
    this.timer.unref();
  }

  /** Stops the check; what is unconfirmed stays in the stream or the spill file for the next process. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.checking?.catch(() => undefined);
    await this.spillWrites;
  }

  /** Keeps one record: the stream when it answers, else the spill file. Resolves once it is durable. */
  async append(record: AuditRecord): Promise<void> {
    const json = serialiseAuditRecord(record);
    const entry = pendingOf(record, json, this.clock(), false);
    this.pending.set(record.requestId, entry);
    try {
      await this.buffer.appendSerialised(json);
    } catch (error) {
      entry.spilled = true;
      this.counters.spilled++;
      this.options.logger.warn(
        { err: error instanceof Error ? error.message : String(error), request_id: record.requestId },
        'audit stream unreachable; record spilled to disk',
      );
      await this.queueSpillWrite(() => appendFile(this.spillFile, `${json}\n`));
    }
  }

  /** Records now in PostgreSQL, by request id (this process's writer committed them). */
  confirm(requestIds: Iterable<string>): void {
    let spilled = false;
    for (const requestId of requestIds) {
      const entry = this.pending.get(requestId);
      if (!entry) continue;
      spilled ||= entry.spilled;
      this.pending.delete(requestId);
    }
    if (spilled) void this.queueSpillWrite(() => this.rewriteSpill()).catch(() => undefined);
  }

  /** Records appended here and not yet known to be in PostgreSQL (the spend they carry counts). */
  unconfirmed(): UnconfirmedSpend[] {
    return [...this.pending.values()].map(({ requestId, keyId, payerId, timestamp, costUsd }) => ({
      requestId,
      keyId,
      payerId,
      timestamp,
      costUsd,
    }));
  }

  /** Counters for logs and tests. */
  stats(): { unconfirmed: number; spilled: number; rewritten: number } {
    return { unconfirmed: this.pending.size, ...this.counters };
  }

  /**
   * Makes sure every record due (spilled, or unconfirmed past `confirmAfterMs`; all with `all`)
   * is in PostgreSQL: looks them up and writes the missing ones. Throws while PostgreSQL is down.
   */
  check(options: { all?: boolean } = {}): Promise<void> {
    const run = async () => {
      const dueBefore = options.all ? Infinity : this.clock() - this.confirmAfterMs;
      // JSON this process serialised from a record (or from a spilled line it validated): parsed
      // back, not validated again, so an odd value is written as before instead of throwing here.
      const due = [...this.pending.values()]
        .filter((p) => p.spilled || p.appendedAt <= dueBefore)
        .map((p) => JSON.parse(p.json) as AuditRecord);
      for (let i = 0; i < due.length; i += chunk) await this.writeMissing(due.slice(i, i + chunk));
    };
    // One check at a time; a forced one waits for the running one and then runs.
    const next = (this.checking ?? Promise.resolve()).catch(() => undefined).then(run);
    this.checking = next;
    return next;
  }

  private async writeMissing(records: AuditRecord[]): Promise<void> {
    const times = records.map((r) => r.timestamp).sort();
    const found = await this.knex(AUDIT_TABLE)
      .whereIn(
        'request_id',
        records.map((r) => r.requestId),
      )
      .andWhere('ts', '>=', times[0]!)
      .andWhere('ts', '<=', times.at(-1)!)
      .select<{ request_id: string }[]>('request_id');
    const present = new Set(found.map((row) => row.request_id));
    const missing = records.filter((r) => !present.has(r.requestId));
    if (missing.length > 0) {
      await this.partitions.ensureFor(missing.map((r) => r.timestamp));
      const inserted = await this.insert(missing);
      this.counters.rewritten += inserted;
      if (inserted > 0)
        this.options.logger.warn(
          { records: inserted },
          'audit records missing from the stream or spilled were written to PostgreSQL directly',
        );
    }
    this.confirm(records.map((r) => r.requestId));
  }

  /**
   * Inserts records; one PostgreSQL refuses as data (SQLSTATE class 22/23, as the writer
   * dead-letters) is logged whole at error level — never retried forever, never silently gone.
   */
  private async insert(records: AuditRecord[]): Promise<number> {
    try {
      return (await insertAuditBatch(this.knex, records, this.options.onBatch)).inserted;
    } catch (error) {
      const cls = sqlStateClass(error);
      if (cls !== '22' && cls !== '23') throw error;
      if (records.length === 1) {
        this.options.logger.error(
          { err: (error as Error).message, record: serialiseAuditRecord(records[0]!) },
          'audit record refused by PostgreSQL; kept in this log line',
        );
        return 0;
      }
      const middle = Math.ceil(records.length / 2);
      return (await this.insert(records.slice(0, middle))) + (await this.insert(records.slice(middle)));
    }
  }

  /** The spill file holds exactly the spilled records still unconfirmed. */
  private async rewriteSpill(): Promise<void> {
    const lines = [...this.pending.values()].filter((p) => p.spilled).map((p) => p.json);
    if (lines.length === 0) return rm(this.spillFile, { force: true });
    const temporary = `${this.spillFile}.tmp`;
    await writeFile(temporary, `${lines.join('\n')}\n`);
    await rename(temporary, this.spillFile);
  }

  /** Spill writes run one after another, so an append never interleaves with a rewrite. */
  private queueSpillWrite(write: () => Promise<void>): Promise<void> {
    const next = this.spillWrites.then(write);
    this.spillWrites = next.catch(() => undefined);
    return next;
  }
}
