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
 * together after it (setImmediate), as one store call (one script on Redis), and while a call
 * is in flight the next records wait for it and then go out together. One command per request
 * cost more than the rest of the audit path (command object, write, reply, promise each); a
 * request waits at most one store round trip longer than before for its record to be durable.
 */
export class AuditBuffer {
  /** The stream this buffer appends to. */
  readonly stream: string;
  private readonly maxLen: number | undefined;
  private waiting: Waiting[] = [];
  private inFlight = false;
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
    // Serialised inside the executor: a record that cannot be serialised rejects, never throws.
    return new Promise<string>((resolve, reject) => {
      this.waiting.push({ fields: { r: serialiseAuditRecord(record) }, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.inFlight || this.scheduled || this.waiting.length === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.send();
    });
  }

  /** One store call with what is waiting; each append settles with its own id or the call's error. */
  private async send(): Promise<void> {
    const batch = this.waiting.length <= MAX_RECORDS_PER_CALL ? this.waiting : this.waiting.slice(0, MAX_RECORDS_PER_CALL);
    this.waiting = batch === this.waiting ? [] : this.waiting.slice(MAX_RECORDS_PER_CALL);
    this.inFlight = true;
    try {
      const entries = batch.map((w) => w.fields);
      const ids =
        this.maxLen === undefined
          ? await this.store.streamAddMany(this.stream, entries)
          : await this.store.streamAddMany(this.stream, entries, { maxLen: this.maxLen });
      batch.forEach((w, i) => w.resolve(ids[i]!));
    } catch (error) {
      for (const w of batch) w.reject(error);
    } finally {
      this.inFlight = false;
      this.schedule();
    }
  }
}
