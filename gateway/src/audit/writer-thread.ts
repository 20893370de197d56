import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { AuditWriting } from '../../../core/audit/index.js';
import type { Settings } from '../../../core/config/index.js';
import type { WriterThreadCall, WriterThreadData, WriterThreadMessage } from './writer-thread-protocol.js';

/** A thread that died is started again after 1 s, doubling after each failed start up to 30 s. */
const restartDelayMs = 1_000;
const maxRestartDelayMs = 30_000;
/** How long stop() lets the thread close its connections before it is terminated. */
const stopTimeoutMs = 10_000;

/**
 * A thread's module, by its name next to this file: the compiled JavaScript in the image,
 * TypeScript through tsx from source.
 */
export function threadModule(name: string): { url: URL; entry?: string } {
  const compiled = new URL(`./${name}.js`, import.meta.url);
  if (existsSync(fileURLToPath(compiled))) return { url: compiled };
  return { url: new URL('./ts-worker-boot.mjs', import.meta.url), entry: new URL(`./${name}.ts`, import.meta.url).href };
}

/**
 * The gateway's audit writer in a worker thread (SVC_AUDIT_WRITER=thread): the thread reads the
 * audit stream and writes PostgreSQL with its own connections, and tells the serving thread
 * which records are committed (for the journal) and its lag (for the gauge). A thread that dies
 * is started again after a second; what it held stays pending in the stream and is taken over
 * (AuditWriter's claim of idle entries), and the journal writes anything overdue itself.
 */
export class AuditWriterThread implements AuditWriting {
  private worker!: Worker;
  private readonly calls = new Map<number, { resolve: (value: number | undefined) => void; reject: (error: Error) => void }>();
  private nextId = 0;
  private lag = 0;
  private stopping = false;
  /** The current worker has exited (stopped, or crashed and not started again yet). */
  private exited = true;
  private restartTimer: NodeJS.Timeout | undefined;

  private constructor(
    private readonly data: WriterThreadData,
    private readonly onWritten: (requestIds: string[]) => void,
    private readonly logger: Logger,
    private readonly module: { url: URL; entry?: string },
  ) {}

  /**
   * Starts the thread and resolves once its writer runs (rejects with the reason it could not
   * start). `module` replaces the writer thread's module (tests: a stand-in speaking the protocol).
   */
  static async start(
    settings: Settings,
    options: { consumer: string; logger: Logger; onWritten: (requestIds: string[]) => void; module?: { url: URL; entry?: string } },
  ): Promise<AuditWriterThread> {
    const thread = new AuditWriterThread(
      { settings, consumer: options.consumer },
      options.onWritten,
      options.logger,
      options.module ?? threadModule('writer-thread-worker'),
    );
    await thread.spawn();
    return thread;
  }

  lagSeconds(): number {
    return this.lag;
  }

  async backlog(): Promise<number> {
    return (await this.call('backlog')) ?? 0;
  }

  async flush(): Promise<void> {
    await this.call('flush');
  }

  /** Stops the writer (its batch in progress finishes), closes its connections and ends the thread. */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    clearTimeout(this.restartTimer);
    if (!this.exited) {
      const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timed out')), stopTimeoutMs).unref());
      await Promise.race([this.call('stop'), timeout]).catch((error: unknown) =>
        this.logger.warn({ err: error }, 'audit writer thread did not stop cleanly; terminating it'),
      );
    }
    await this.worker.terminate();
  }

  private spawn(): Promise<void> {
    const { url, entry } = this.module;
    const worker = new Worker(url, { workerData: { ...this.data, ...(entry && { entry }) } satisfies WriterThreadData });
    this.worker = worker;
    this.exited = false;
    return new Promise((resolve, reject) => {
      let started = false;
      worker.on('message', (message: WriterThreadMessage) => {
        switch (message.kind) {
          case 'ready':
            started = true;
            resolve();
            break;
          case 'failed':
            reject(new Error(`the audit writer thread could not start: ${message.error}`));
            void worker.terminate();
            break;
          case 'written':
            this.onWritten(message.requestIds);
            break;
          case 'lag':
            this.lag = message.seconds;
            break;
          case 'reply': {
            const call = this.calls.get(message.id);
            this.calls.delete(message.id);
            if (message.error !== undefined) call?.reject(new Error(message.error));
            else call?.resolve(message.value);
            break;
          }
        }
      });
      worker.on('error', (error) => this.logger.error({ err: error }, 'audit writer thread failed'));
      worker.on('exit', (code) => {
        if (worker === this.worker) this.exited = true;
        for (const call of this.calls.values()) call.reject(new Error(`the audit writer thread exited (${code})`));
        this.calls.clear();
        if (!started) return reject(new Error(`the audit writer thread exited (${code}) before it started`));
        if (this.stopping || worker !== this.worker) return;
        this.logger.error({ code }, 'audit writer thread exited; starting it again');
        this.restartAfter(0);
      });
    });
  }

  /** Starts the thread again after a delay; a start that fails is tried again, later each time. */
  private restartAfter(failedStarts: number): void {
    const delay = Math.min(restartDelayMs * 2 ** failedStarts, maxRestartDelayMs);
    this.restartTimer = setTimeout(() => {
      if (this.stopping) return;
      this.spawn().catch((error: unknown) => {
        this.logger.error(
          { err: error, retryInMs: Math.min(delay * 2, maxRestartDelayMs) },
          'audit writer thread did not start again; retrying',
        );
        if (!this.stopping) this.restartAfter(failedStarts + 1);
      });
    }, delay);
  }

  private call(op: WriterThreadCall['op']): Promise<number | undefined> {
    // A stopped thread (or one between a crash and its restart) would never answer.
    if (this.exited) return Promise.reject(new Error(`the audit writer thread is ${this.stopping ? 'stopped' : 'restarting'}`));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.calls.set(id, { resolve, reject });
      this.worker.postMessage({ id, op } satisfies WriterThreadCall);
    });
  }
}
