import type { Store } from '../store/types.js';
import { serialiseAuditRecord, type AuditRecord } from './record.js';

/** The stream the audit buffer appends to and the audit writers read, unless configured. */
export const DEFAULT_AUDIT_STREAM = 'audit';

/** Options of the audit buffer. */
export interface AuditBufferOptions {
  /** Stream name (the store adds its own key prefix); default 'audit'. */
  stream?: string;
  /**
   * Approximate cap on the stream's length. Trimming drops the OLDEST entries whether or not
   * they were written, so leave it unset unless losing records beats running out of memory;
   * writers delete what they wrote, so a healthy stream stays short anyway.
   */
  maxLen?: number;
}

/** Most records one store call carries; a larger backlog goes out in several calls, one after another. */
const MAX_RECORDS_PER_CALL = 256;

interface Waiting {
  fields: Record<string, string>;
  resolve(id: string): void;
  reject(error: unknown): void;
}

/**
 * The durable side of the audit pipeline on the request path. Once `append` resolves the
 * record is in the stream (Redis, or the in-process queue in embedded mode), so it survives
 * the gateway dying; a background AuditWriter moves it to PostgreSQL.
 *
 * Appends are coalesced: records appended while the event loop works through one turn go out
 * together after it (setImmediate), as one store call (one script on Redis); one command per
 * request cost more than the rest of the audit path (command object, write, reply, promise
 * each). Calls do not wait for each other: holding the next records until the previous call
 * answered made bigger batches, but while the store was failing every request then waited for
 * two failed calls instead of one (found by the store-outage test, which timed out).
 */
export class AuditBuffer {
  /** The stream this buffer appends to. */
  readonly stream: string;
  private readonly maxLen: number | undefined;
  private waiting: Waiting[] = [];
  private scheduled = false;

  constructor(
    private readonly store: Store,
    options: AuditBufferOptions = {},
  ) {
    this.stream = options.stream ?? DEFAULT_AUDIT_STREAM;
    this.maxLen = options.maxLen;
  }

  /** Appends one record as a single field `r` holding compact JSON; resolves with the entry id. */
  append(record: AuditRecord): Promise<string> {
    let json: string;
    try {
      json = serialiseAuditRecord(record);
    } catch (error) {
      return Promise.reject(error as Error); // a record that cannot be serialised rejects, never throws
    }
    return this.appendSerialised(json);
  }

  /** Appends a record already serialised by serialiseAuditRecord; resolves with the entry id. */
  appendSerialised(json: string): Promise<string> {
    return new Promise<string>((resolve, reject) => {
      this.waiting.push({ fields: { r: json }, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      while (this.waiting.length > 0) void this.send(this.waiting.splice(0, MAX_RECORDS_PER_CALL));
    });
  }

  /** One store call for `batch`; each append settles with its own id or the call's error. */
  private async send(batch: Waiting[]): Promise<void> {
    try {
      const entries = batch.map((w) => w.fields);
      const ids =
        this.maxLen === undefined
          ? await this.store.streamAddMany(this.stream, entries)
          : await this.store.streamAddMany(this.stream, entries, { maxLen: this.maxLen });
      batch.forEach((w, i) => w.resolve(ids[i]!));
    } catch (error) {
      for (const w of batch) w.reject(error);
    }
  }
}
