/** What a worker reports for one key: nothing (done), or when to look at it again. */
export interface WorkOutcome {
  requeueAfterMs?: number;
}

/** Tuning of a work queue. */
export interface WorkQueueOptions {
  /** Objects reconciled at the same time (never the same key twice). */
  concurrency: number;
  /** First retry delay after a failure; doubles per consecutive failure of the same key. */
  baseRetryMs: number;
  maxRetryMs: number;
  /** Random source for the retry jitter (tests pass a fixed one). */
  random?: () => number;
}

/** Delay before retry number `failures` (1-based): exponential, capped, with jitter in [50 %, 100 %]. */
export function retryDelayMs(
  failures: number,
  options: Pick<WorkQueueOptions, 'baseRetryMs' | 'maxRetryMs'>,
  random: () => number = Math.random,
): number {
  const exponential = Math.min(options.maxRetryMs, options.baseRetryMs * 2 ** Math.min(failures - 1, 30));
  return Math.round(exponential * (0.5 + random() * 0.5));
}

/**
 * Keys of objects to reconcile, as in client-go's workqueue: a key waits at most once (adding
 * it again while it waits is a no-op), is never processed by two workers at once (added while
 * in progress, it runs again after), and a key whose work fails comes back after a per-key
 * exponential backoff that a success resets.
 */
export class WorkQueue {
  private readonly waiting: string[] = [];
  private readonly waitingSet = new Set<string>();
  private readonly active = new Set<string>();
  /** When each key in progress started (epoch ms), for the stuck-reconcile health check. */
  private readonly startedAt = new Map<string, number>();
  private readonly dirty = new Set<string>();
  private readonly delayed = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  private readonly failures = new Map<string, number>();
  private readonly idleWaiters: (() => void)[] = [];
  private stopped = false;

  constructor(
    private readonly work: (key: string) => Promise<WorkOutcome>,
    private readonly options: WorkQueueOptions,
    private readonly onDepthChange: (depth: number) => void = () => undefined,
  ) {}

  /** Keys waiting to be processed (not counting those in progress or delayed). */
  /**
   * How long the longest reconcile in progress has been running (0 when none): a reconcile that
   * never ends holds its worker forever, and with all workers held the controller is stuck.
   */
  longestRunningMs(now: number = Date.now()): number {
    let oldest = now;
    for (const at of this.startedAt.values()) oldest = Math.min(oldest, at);
    return now - oldest;
  }

  get depth(): number {
    return this.waiting.length;
  }

  /** Queues `key` now. */
  add(key: string): void {
    if (this.stopped) return;
    if (this.active.has(key)) {
      this.dirty.add(key);
      return;
    }
    if (this.waitingSet.has(key)) return;
    this.waitingSet.add(key);
    this.waiting.push(key);
    this.onDepthChange(this.waiting.length);
    this.pump();
  }

  /** Queues `key` after `delayMs`; an earlier pending schedule for it wins. */
  addAfter(key: string, delayMs: number): void {
    if (this.stopped) return;
    const at = Date.now() + delayMs;
    const pending = this.delayed.get(key);
    if (pending && pending.at <= at) return;
    if (pending) clearTimeout(pending.timer);
    const timer = setTimeout(() => {
      this.delayed.delete(key);
      this.add(key);
    }, delayMs);
    timer.unref();
    this.delayed.set(key, { at, timer });
  }

  /** Consecutive failures of `key` so far (0 after a success). */
  failuresOf(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  /** Stops taking keys, drops scheduled ones and waits for the work in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const { timer } of this.delayed.values()) clearTimeout(timer);
    this.delayed.clear();
    this.waiting.length = 0;
    this.waitingSet.clear();
    this.dirty.clear();
    this.onDepthChange(0);
    if (this.active.size > 0) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  private pump(): void {
    while (!this.stopped && this.active.size < this.options.concurrency && this.waiting.length > 0) {
      const key = this.waiting.shift()!;
      this.waitingSet.delete(key);
      this.onDepthChange(this.waiting.length);
      this.active.add(key);
      this.startedAt.set(key, Date.now());
      void this.process(key);
    }
  }

  private async process(key: string): Promise<void> {
    try {
      const outcome = await this.work(key);
      this.failures.delete(key);
      if (outcome.requeueAfterMs !== undefined) this.addAfter(key, outcome.requeueAfterMs);
    } catch {
      // The worker reports its own errors; the queue only schedules the retry.
      const failures = this.failuresOf(key) + 1;
      this.failures.set(key, failures);
      this.addAfter(key, retryDelayMs(failures, this.options, this.options.random));
    } finally {
      this.active.delete(key);
      this.startedAt.delete(key);
      if (this.dirty.delete(key)) this.add(key);
      this.pump();
      if (this.active.size === 0) for (const resolve of this.idleWaiters.splice(0)) resolve();
    }
  }
}
