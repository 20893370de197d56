import type { Knex } from 'knex';
import type { Store, StreamEntry } from '../store/types.js';
import { DEFAULT_AUDIT_STREAM } from './buffer.js';
import { AuditPartitions, sqlStateClass, type AuditLogger } from './partitions.js';
import { AuditRecordError, parseAuditRecord, type AuditRecord } from './record.js';
import { insertAuditBatch } from './insert.js';
import { outageSource } from '../errors/dependency-outage.js';

/** Options of an audit writer; only `consumer` is required. */
export interface AuditWriterOptions {
  /** Consumer name, unique per process (e.g. `${hostname}-${pid}`): pending entries are tracked per consumer. */
  consumer: string;
  /** Stream to read; default 'audit' (the AuditBuffer's default). */
  stream?: string;
  /** Consumer group shared by the writers of every gateway; default 'audit-writers'. */
  group?: string;
  /** Where entries that can never be written go (kept, not dropped); default `${stream}:dead`. */
  deadLetterStream?: string;
  /** Entries per read and per transaction; default 500. */
  batchSize?: number;
  /** How long one read waits for new entries; bounds how long stop() can take. Default 1000. */
  blockMs?: number;
  /** Entries read but not acked by a (dead) consumer for this long are taken over; default 30_000. */
  claimIdleMs?: number;
  /**
   * After a batch smaller than `batchSize`, wait this long before reading again, so that under
   * load batches fill up instead of the loop paying its round trips and a transaction for every
   * few records. Bounds the extra audit lag; flush() cuts the wait short. Default 100: under the
   * overhead load the writer thread took 21–22 µs per request with 100 against 25–30 with 25
   * (bench/RESULTS.md, 2026-11-27); a tenth of a second more before a row is in PostgreSQL is
   * invisible to the dashboard and far below the lag alerts' thresholds.
   */
  fillMs?: number;
  /** Exponential backoff between retries of a failed batch; default 200..10_000 ms. */
  retryBackoffMs?: { min: number; max: number };
  /**
   * Extra work in the batch's transaction, e.g. wallet debits. It receives only the records
   * this transaction inserted (not those already in the table from an earlier attempt), so the
   * work happens exactly once per record. Throwing rolls the batch back and it is retried.
   */
  onBatch?: (trx: Knex.Transaction, records: AuditRecord[]) => Promise<void>;
  /** Told after each commit which records are now in PostgreSQL (inserted or already there): the journal stops watching them. */
  onWritten?: (records: AuditRecord[]) => void;
  logger?: AuditLogger;
}

/** Counters of one writer since start. */
export interface AuditWriterStats {
  /** Records this writer inserted. */
  written: number;
  /** Records skipped because their row already existed (a retried batch). */
  duplicates: number;
  /** Entries moved to the dead-letter stream. */
  deadLettered: number;
  /** Failed write attempts (each is retried). */
  failedBatches: number;
  lastError?: string;
}

interface Parsed {
  entry: StreamEntry;
  record: AuditRecord;
}

interface FlushWaiter {
  marker: string;
  epoch: number;
  resolve: () => void;
  reject: (error: Error) => void;
}

/** The consumer group of the audit writers unless configured. */
export const DEFAULT_AUDIT_GROUP = 'audit-writers';

/** Records in the audit stream not yet written and deleted by any writer (the buffer's depth). */
export async function auditBacklog(store: Store, stream = DEFAULT_AUDIT_STREAM, group = DEFAULT_AUDIT_GROUP): Promise<number> {
  return (await store.streamGroupInfo(stream, group)).length;
}

/**
 * What the gateway needs of whatever writes its audit stream to PostgreSQL: an AuditWriter in
 * the serving thread, or one in a worker thread (gateway/src/audit/writer-thread.ts).
 */
export interface AuditWriting {
  flush(): Promise<void>;
  stop(): Promise<void>;
  lagSeconds(): number;
  backlog(): Promise<number>;
}

/** Thrown inside the loop when stop() interrupts a retry; the entries stay pending for a takeover. */
class Stopping extends Error {}

const consoleLogger: AuditLogger = {
  warn: (obj, msg) => console.warn(msg, obj),
  error: (obj, msg) => console.error(msg, obj),
};

/** When a stream entry was appended: the ms part of its id (`<ms>-<seq>`). */
function appendedAt(id: string): number {
  return Number(id.split('-', 1)[0]);
}

function compareIds(a: string, b: string): number {
  const [am = 0, as = 0] = a.split('-').map(Number);
  const [bm = 0, bs = 0] = b.split('-').map(Number);
  return am === bm ? as - bs : am - bm;
}

/**
 * Moves audit records from the stream into PostgreSQL in batches, one per gateway process.
 * An entry is acked (and deleted) only after the transaction holding its row committed, so a
 * crash or an outage at any point leaves it pending, to be retried here or taken over by
 * another writer after `claimIdleMs`; the table's unique key makes the rewrite harmless.
 */
export class AuditWriter implements AuditWriting {
  private readonly stream: string;
  private readonly group: string;
  private readonly deadLetter: string;
  private readonly batchSize: number;
  private readonly blockMs: number;
  private readonly claimIdleMs: number;
  private readonly fillMs: number;
  /** When abandoned entries were last looked for (epoch ms); the look-up is needed only now and then. */
  private lastClaimAt = 0;
  private readonly backoff: { min: number; max: number };
  private readonly logger: AuditLogger;
  private readonly partitions: AuditPartitions;
  private readonly counters: AuditWriterStats = { written: 0, duplicates: 0, deadLettered: 0, failedBatches: 0 };
  private state: 'new' | 'running' | 'stopping' | 'stopped' = 'new';
  private loopDone: Promise<void> = Promise.resolve();
  private wake: (() => void) | undefined;
  private readEpoch = 0;
  private highestRead = '0-0';
  private waiters: FlushWaiter[] = [];
  /** Epoch ms the oldest entry of the batch being written was appended, while one is. */
  private writingSince: number | undefined;
  /** How long the oldest entry of the last batch waited in the stream, until it committed. */
  private lastLagMs = 0;

  constructor(
    private readonly store: Store,
    private readonly knex: Knex,
    private readonly options: AuditWriterOptions,
  ) {
    this.stream = options.stream ?? DEFAULT_AUDIT_STREAM;
    this.group = options.group ?? DEFAULT_AUDIT_GROUP;
    this.deadLetter = options.deadLetterStream ?? `${this.stream}:dead`;
    this.batchSize = options.batchSize ?? 500;
    this.blockMs = options.blockMs ?? 1000;
    this.claimIdleMs = options.claimIdleMs ?? 30_000;
    this.fillMs = options.fillMs ?? 100;
    this.backoff = options.retryBackoffMs ?? { min: 200, max: 10_000 };
    this.logger = options.logger ?? consoleLogger;
    this.partitions = new AuditPartitions(knex, this.logger);
  }

  /** Creates the consumer group and runs the loop in the background until stop(). */
  async start(): Promise<void> {
    if (this.state !== 'new') throw new Error(`audit writer cannot start: it is ${this.state}`);
    // A store down at start-up does not keep the process from serving: the loop makes the group
    // once the store answers (its NOGROUP retry), and what is appended meanwhile is spilled.
    await this.store.streamCreateGroup(this.stream, this.group).catch((error: unknown) => {
      if (outageSource(error) === undefined) throw error;
      this.logger.warn(
        { err: error instanceof Error ? error.message : String(error), stream: this.stream },
        'audit stream group not made yet: the store is unavailable; retrying',
      );
    });
    this.state = 'running';
    this.loopDone = this.loop();
  }

  /** Lets the current batch finish (or abandons its retry during an outage, leaving it pending) and stops. */
  async stop(): Promise<void> {
    if (this.state === 'new') this.state = 'stopped';
    if (this.state !== 'running') return this.loopDone;
    this.state = 'stopping';
    this.wake?.();
    await this.loopDone;
    this.state = 'stopped';
    for (const waiter of this.waiters.splice(0)) waiter.reject(new Error('audit writer stopped before the flush completed'));
  }

  /**
   * Resolves when everything appended before the call has been read from the stream and what
   * this writer read is committed. With several writers, entries another live writer holds may
   * still be in its transaction. Waits through a database outage; bound it with a timer on shutdown.
   */
  async flush(): Promise<void> {
    if (this.state !== 'running') throw new Error(`audit writer cannot flush: it is ${this.state}`);
    // The marker gives a cut-off id and wakes the blocked read at once.
    const marker = await this.store.streamAdd(this.stream, { flush: this.options.consumer });
    this.wake?.(); // ends a fill wait at once
    if (compareIds(this.highestRead, marker) >= 0) return;
    await new Promise<void>((resolve, reject) => this.waiters.push({ marker, epoch: this.readEpoch, resolve, reject }));
  }

  /**
   * How far behind this writer is, in seconds: how long the oldest entry it is writing has been
   * in the stream (so the value keeps growing through a database outage), else how long the last
   * batch's oldest entry waited; 0 once a read finds the stream empty. Measured from the entry's
   * append time (its id), not the request's arrival: a long stream is not writer lag.
   */
  lagSeconds(now = Date.now()): number {
    return (this.writingSince !== undefined ? now - this.writingSince : this.lastLagMs) / 1000;
  }

  /** Records in the stream not yet written and deleted, by any writer (the buffer's depth). */
  backlog(): Promise<number> {
    return auditBacklog(this.store, this.stream, this.group);
  }

  /** Counters since start, for metrics and health. */
  stats(): AuditWriterStats {
    return { ...this.counters };
  }

  private async loop(): Promise<void> {
    let failures = 0;
    while (this.state === 'running') {
      try {
        await this.step();
        failures = 0;
      } catch (error) {
        if (error instanceof Stopping) break;
        const message = error instanceof Error ? error.message : String(error);
        this.counters.lastError = message;
        this.logger.error({ err: message, stream: this.stream }, 'audit stream read or ack failed; retrying');
        if (message.includes('NOGROUP')) await this.store.streamCreateGroup(this.stream, this.group).catch(() => undefined);
        await this.sleep(this.delay(failures++));
      }
    }
  }

  /**
   * One batch: entries abandoned by a dead consumer first (looked for at most every quarter of
   * `claimIdleMs`: they cannot be taken over sooner anyway), then new ones.
   */
  private async step(): Promise<void> {
    const now = Date.now();
    if (now - this.lastClaimAt >= this.claimIdleMs / 4) {
      const claimed = await this.store.streamClaimIdle(this.stream, this.group, this.options.consumer, {
        minIdleMs: this.claimIdleMs,
        count: this.batchSize,
      });
      // A full claim may have left more behind: look again on the next step.
      if (claimed.length < this.batchSize) this.lastClaimAt = now;
      if (claimed.length > 0) return this.process(claimed, false);
    }
    const epoch = ++this.readEpoch;
    const fresh = await this.store.streamReadGroup(this.stream, this.group, this.options.consumer, {
      count: this.batchSize,
      blockMs: this.blockMs,
    });
    if (fresh.length > 0) {
      await this.process(fresh, true);
      if (fresh.length < this.batchSize && this.fillMs > 0 && this.state === 'running' && this.waiters.length === 0)
        await this.sleep(this.fillMs);
      return;
    }
    // Nothing new: every flush that began before this read started has been served.
    this.settleWaiters((w) => w.epoch < epoch);
    this.lastLagMs = 0;
  }

  private async process(entries: StreamEntry[], inOrder: boolean): Promise<void> {
    const parsed: Parsed[] = [];
    for (const entry of entries) {
      if (entry.fields.flush !== undefined && entry.fields.r === undefined) continue; // a flush marker: only acked
      try {
        parsed.push({ entry, record: parseAuditRecord(entry.fields.r ?? '') });
      } catch (error) {
        if (!(error instanceof AuditRecordError)) throw error;
        await this.toDeadLetter(entry, `unreadable entry: ${error.message}`);
      }
    }
    this.writingSince = parsed.length > 0 ? appendedAt(parsed[0]!.entry.id) : undefined;
    for (const p of parsed) this.writingSince = Math.min(this.writingSince!, appendedAt(p.entry.id));
    await this.writeAll(parsed);
    if (this.writingSince !== undefined) this.lastLagMs = Date.now() - this.writingSince;
    this.writingSince = undefined;
    const ids = entries.map((e) => e.id);
    // Same round trip on Redis (auto-pipelined). If it fails, the entries come back after
    // claimIdleMs and are skipped by the unique key.
    await Promise.all([this.store.streamAck(this.stream, this.group, ids), this.store.streamDelete(this.stream, ids)]);
    const last = ids.at(-1);
    if (inOrder && last !== undefined) {
      this.highestRead = last;
      this.settleWaiters((w) => compareIds(last, w.marker) >= 0);
    }
  }

  /**
   * Writes the records, retrying outages with backoff for as long as it takes. A data error
   * (SQLSTATE class 22/23) is the rows' fault, not the database's: the batch is split in halves
   * until the offending record is alone, and that one goes to the dead-letter stream.
   */
  private async writeAll(batch: Parsed[]): Promise<void> {
    if (batch.length === 0) return;
    for (let attempt = 0; ; attempt++) {
      try {
        await this.partitions.ensureFor(batch.map((p) => p.record.timestamp));
        const records = batch.map((p) => p.record);
        const { inserted, skipped } = await insertAuditBatch(this.knex, records, this.options.onBatch);
        this.counters.written += inserted;
        this.counters.duplicates += skipped;
        this.options.onWritten?.(records);
        return;
      } catch (error) {
        const cls = sqlStateClass(error);
        const message = error instanceof Error ? error.message : String(error);
        if (cls === '22' || cls === '23') {
          const [single] = batch;
          if (batch.length === 1 && single) return this.toDeadLetter(single.entry, `rejected by PostgreSQL: ${message}`);
          const middle = Math.ceil(batch.length / 2);
          await this.writeAll(batch.slice(0, middle));
          return this.writeAll(batch.slice(middle));
        }
        this.counters.failedBatches++;
        this.counters.lastError = message;
        const delayMs = this.delay(attempt);
        this.logger.warn(
          { err: message, records: batch.length, attempt: attempt + 1, retryInMs: delayMs },
          'audit batch not written; retrying',
        );
        if (this.state !== 'running') throw new Stopping();
        await this.sleep(delayMs);
        if (this.state !== 'running') throw new Stopping();
      }
    }
  }

  /** Keeps an entry that can never be written where people can look at it, so acking it loses nothing. */
  private async toDeadLetter(entry: StreamEntry, reason: string): Promise<void> {
    this.logger.error({ id: entry.id, reason }, 'audit entry moved to the dead-letter stream');
    await this.store.streamAdd(this.deadLetter, { ...entry.fields, id: entry.id, error: reason }, { maxLen: 100_000 });
    this.counters.deadLettered++;
  }

  private settleWaiters(done: (w: FlushWaiter) => boolean): void {
    const keep: FlushWaiter[] = [];
    for (const waiter of this.waiters) {
      if (done(waiter)) waiter.resolve();
      else keep.push(waiter);
    }
    this.waiters = keep;
  }

  /** Exponential backoff with jitter in [d/2, d], so the gateways do not retry in lockstep. */
  private delay(attempt: number): number {
    const d = Math.min(this.backoff.max, this.backoff.min * 2 ** Math.min(attempt, 30));
    return Math.round(d / 2 + (Math.random() * d) / 2);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wake = done;
    });
  }
}
