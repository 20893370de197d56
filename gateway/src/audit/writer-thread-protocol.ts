// Messages between the serving thread and its audit writer thread (writer-thread.ts and
// writer-thread-worker.ts). Structured-clone data only.
import type { Settings } from '../../../core/config/index.js';

/** What the thread starts with. */
export interface WriterThreadData {
  settings: Settings;
  consumer: string;
  /** The module to run, for the TypeScript bootstrap (ts-worker-boot.mjs) when running from source. */
  entry?: string;
}

/** A request to the thread; answered by a `reply` with the same id. */
export type WriterThreadCall = { id: number; op: 'flush' | 'backlog' | 'stop' };

/** What the thread sends. */
export type WriterThreadMessage =
  | { kind: 'ready' }
  | { kind: 'failed'; error: string }
  | { kind: 'reply'; id: number; value?: number; error?: string }
  /** Request ids of records committed to PostgreSQL (the journal stops watching them). */
  | { kind: 'written'; requestIds: string[] }
  /** The writer's lag, sent every half second (the gauge is read at scrape time). */
  | { kind: 'lag'; seconds: number };
