import type { KeyRepository } from '../../../core/keys/index.js';

/** Characters of a secret hash the index keeps: 48 bits, so a guessed key matches by chance ~never. */
const prefixLength = 12;
/** Changes are re-read from this far before the last one seen: commits can land out of order. */
const overlapMs = 5_000;

/**
 * Which secret hashes exist, as short prefixes in memory, so that a request with a guessed key
 * is refused without asking PostgreSQL (issue 13 finding 9): a per-hash negative cache cannot
 * stop a flood of distinct random keys. Loaded whole at start; kept current by the key change
 * announcements (every announced hash is added) and by an incremental re-read of changed keys
 * when a hash is not found, at most one per `refreshMs` — so a key whose announcement was lost
 * (or that was written straight to the table) still works at once, at worst a moment later, and
 * guessing costs at most one query per interval whatever the request rate.
 * Deleted keys stay in the index: it may say "maybe" wrongly, never "no".
 */
export class KnownKeys {
  private readonly prefixes = new Set<string>();
  private loaded = false;
  private latest: Date | undefined;
  private lastRefreshAt = -Infinity;
  private refreshing: Promise<void> | undefined;
  private planned: { startAt: number; promise: Promise<void> } | undefined;

  constructor(
    private readonly repository: KeyRepository,
    private readonly options: { refreshMs?: number; clock?: () => number } = {},
  ) {}

  /** Loads every hash; until it succeeds, every hash counts as possibly known. */
  async load(): Promise<void> {
    this.lastRefreshAt = (this.options.clock ?? Date.now)();
    await this.refresh();
  }

  /** A hash that was announced (created or changed somewhere). */
  add(secretHash: string): void {
    this.prefixes.add(secretHash.slice(0, prefixLength));
  }

  /**
   * False only when no key can have this hash: a hash missing from the index waits for a re-read
   * of changed keys that starts after it arrived (so a key created before the request is always
   * found), shared by every miss meanwhile and at most one per `refreshMs`.
   */
  async mayExist(secretHash: string): Promise<boolean> {
    if (this.loaded && this.prefixes.has(secretHash.slice(0, prefixLength))) return true;
    if (!this.loaded) {
      // Not loaded yet (PostgreSQL was down at start): every hash may exist; loading is retried.
      void this.refreshStartingAfter(this.now()).catch(() => undefined);
      return true;
    }
    await this.refreshStartingAfter(this.now()).catch(() => undefined); // PostgreSQL down: the index as it is
    return this.prefixes.has(secretHash.slice(0, prefixLength));
  }

  private now(): number {
    return (this.options.clock ?? Date.now)();
  }

  /** A re-read that starts at or after `arrival`, joined if one is already planned. */
  private refreshStartingAfter(arrival: number): Promise<void> {
    if (this.planned && this.planned.startAt >= arrival) return this.planned.promise;
    const startAt = Math.max(arrival, this.lastRefreshAt + (this.options.refreshMs ?? 250));
    const plan = { startAt, promise: Promise.resolve() };
    plan.promise = (async () => {
      const wait = startAt - this.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait).unref());
      await this.refreshing?.catch(() => undefined);
      if (this.planned === plan) this.planned = undefined; // later arrivals plan the next one
      this.lastRefreshAt = this.now();
      await this.refresh();
    })();
    this.planned = plan;
    return plan.promise;
  }

  private refresh(): Promise<void> {
    this.refreshing ??= (async () => {
      try {
        const since = this.latest ? new Date(this.latest.getTime() - overlapMs) : undefined;
        const { hashes, latest } = await this.repository.hashesChangedSince(since);
        for (const hash of hashes) this.add(hash);
        if (latest && (!this.latest || latest > this.latest)) this.latest = latest;
        this.loaded = true;
      } finally {
        this.refreshing = undefined;
      }
    })();
    return this.refreshing;
  }
}
