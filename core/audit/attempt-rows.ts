// The audit row's `attempts` column in the row's own convention (snake_case, like every column
// and the Management API), converted at the database boundary; the record the gateway appends
// to the stream keeps the code's camelCase. Rows written before migration 009 are rewritten by
// it; reading still accepts either spelling, so a row written by an older replica during a
// rolling upgrade is not misread.
import type { AuditAttempt } from './record.js';

/** One attempt as stored in `audit_log.attempts` and shown by the Management API. */
export interface StoredAttempt {
  supplier: string;
  region: string;
  started_at: number;
  latency_ms: number;
  outcome: 'ok' | 'failed';
  status: number;
  code?: string;
  selection_ms?: number;
  credential?: string;
}

/** Attempt → stored shape (absent optional fields stay absent). */
export function toStoredAttempt(a: AuditAttempt): StoredAttempt {
  return {
    supplier: a.supplier,
    region: a.region,
    started_at: a.startedAt,
    latency_ms: a.latencyMs,
    outcome: a.outcome,
    status: a.status,
    ...(a.code !== undefined && { code: a.code }),
    ...(a.selectionMs !== undefined && { selection_ms: a.selectionMs }),
    ...(a.credential !== undefined && { credential: a.credential }),
  };
}

/** Stored shape (or an older camelCase row) → attempt. */
export function fromStoredAttempt(stored: StoredAttempt | AuditAttempt): AuditAttempt {
  const s = stored as Partial<StoredAttempt> & Partial<AuditAttempt>;
  const selection = s.selection_ms ?? s.selectionMs;
  return {
    supplier: s.supplier!,
    region: s.region!,
    startedAt: (s.started_at ?? s.startedAt)!,
    latencyMs: (s.latency_ms ?? s.latencyMs)!,
    outcome: s.outcome!,
    status: s.status!,
    ...(s.code !== undefined && { code: s.code }),
    ...(selection !== undefined && { selectionMs: selection }),
    ...(s.credential !== undefined && { credential: s.credential }),
  };
}
