import type { Store } from '../store/types.js';
import { announceKeyChange } from './change-feed.js';

/** Where the announcer reports an announcement it still owes (a logger's warn). */
export type OwedLogger = (facts: { owed: number; err: string }, message: string) => void;

/**
 * Announces key changes (store eviction + pub/sub) and keeps the ones that failed owed, retried
 * in the background every `retryMs` until the store takes them: a key revoked or suspended while
 * the store was unreachable must stop working as soon as it is back, not when the cache entry
 * expires. The same idea as the operator's owed announcements, for the Management API's writes.
 *
 * Owed announcements live in this process: if it dies owing one, the store's cache TTL
 * (keyCacheTtlMs) bounds how long replicas may use the old record — and repeating the write
 * (an idempotent revoke re-announces) pays it from any replica.
 */
export class KeyAnnouncer {
  private readonly owed = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private paying: Promise<void> | undefined;

  constructor(
    private readonly store: Store,
    private readonly options: { retryMs?: number; logger?: OwedLogger } = {},
  ) {}

  /** Announces that the key with this hash changed; throws (keeping it owed) when the store fails. */
  async announce(secretHash: string): Promise<void> {
    this.owed.add(secretHash);
    try {
      await announceKeyChange(this.store, secretHash);
    } catch (error) {
      this.scheduleRetry();
      throw error;
    }
    this.owed.delete(secretHash);
  }

  /**
   * Announces several changed keys (a change to a user, an organisation or a policy touches all
   * their keys) and never throws: what the store does not take stays owed and is retried, as the
   * database already holds the change.
   */
  async announceAll(secretHashes: readonly string[]): Promise<void> {
    await Promise.all(secretHashes.map((hash) => this.announce(hash).catch(() => undefined)));
  }

  /** Announcements not yet made (tests, health). */
  get owedCount(): number {
    return this.owed.size;
  }

  /** Pays what is owed now; resolves when everything is paid or the store failed again. */
  async payOwed(): Promise<void> {
    this.paying ??= (async () => {
      try {
        for (const hash of [...this.owed]) {
          await announceKeyChange(this.store, hash);
          this.owed.delete(hash);
        }
      } catch (error) {
        this.options.logger?.(
          { owed: this.owed.size, err: error instanceof Error ? error.message : String(error) },
          'key change announcement still owed; retrying',
        );
        this.scheduleRetry();
      } finally {
        this.paying = undefined;
      }
    })();
    return this.paying;
  }

  /** Stops retrying (what is still owed is left to the cache TTL). */
  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private scheduleRetry(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.payOwed();
    }, this.options.retryMs ?? 1_000);
    this.timer.unref();
  }
}
