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

/**
 * The durable side of the audit pipeline on the request path: one XADD per request (a
 * pipelined round trip on Redis, a push onto the in-process queue in embedded mode). Once
 * `append` resolves the record survives the gateway dying; a background AuditWriter moves it
 * to PostgreSQL.
 */
export class AuditBuffer {
  /** The stream this buffer appends to. */
  readonly stream: string;
  private readonly maxLen: number | undefined;

  constructor(
    private readonly store: Store,
    options: AuditBufferOptions = {},
  ) {
    this.stream = options.stream ?? DEFAULT_AUDIT_STREAM;
    this.maxLen = options.maxLen;
  }

  /** Appends one record as a single field `r` holding compact JSON; resolves with the entry id. */
  async append(record: AuditRecord): Promise<string> {
    const fields = { r: serialiseAuditRecord(record) };
    return this.maxLen === undefined
      ? this.store.streamAdd(this.stream, fields)
      : this.store.streamAdd(this.stream, fields, { maxLen: this.maxLen });
  }
}
