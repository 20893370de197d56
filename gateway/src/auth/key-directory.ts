import { LRUCache } from 'lru-cache';
import { keyCacheKey, keyCacheTtlMs, keyChangeChannel, type KeyRecord, type KeyRepository } from '../../../core/keys/index.js';
import type { Store } from '../../../core/store/index.js';

/** Tuning for the in-process key cache. */
export interface KeyDirectoryOptions {
  maxEntries?: number;
  /** How long a found key is trusted without asking the store (pub/sub evicts sooner). */
  positiveTtlMs?: number;
  /** How long an unknown hash is remembered, so a flood of bad keys does not reach PostgreSQL. */
  negativeTtlMs?: number;
}

/**
 * Finds the key for a secret hash: in-process LRU first (no I/O on the hot path), then the
 * shared store, then PostgreSQL (which refills the store). Writers announce changes on the
 * store's pub/sub channel and every replica evicts at once.
 */
export class KeyDirectory {
  private readonly cache: LRUCache<string, { record: KeyRecord | null }>;
  private readonly negativeTtlMs: number;
  private unsubscribe: (() => Promise<void>) | undefined;

  constructor(
    private readonly store: Store,
    private readonly repository: KeyRepository,
    options: KeyDirectoryOptions = {},
  ) {
    this.cache = new LRUCache({ max: options.maxEntries ?? 50_000, ttl: options.positiveTtlMs ?? 60_000 });
    this.negativeTtlMs = options.negativeTtlMs ?? 5_000;
  }

  /** Subscribes to key changes; call once before serving. */
  async start(): Promise<void> {
    this.unsubscribe = await this.store.subscribe(keyChangeChannel, (secretHash) => this.cache.delete(secretHash));
  }

  async stop(): Promise<void> {
    await this.unsubscribe?.();
  }

  /** The key for this hash, or undefined when no key has it. */
  async find(secretHash: string): Promise<KeyRecord | undefined> {
    const hit = this.cache.get(secretHash);
    if (hit) return hit.record ?? undefined;
    const cached = await this.store.get(keyCacheKey(secretHash));
    if (cached) {
      const record = JSON.parse(cached) as KeyRecord;
      this.cache.set(secretHash, { record });
      return record;
    }
    const record = await this.repository.findByHash(secretHash);
    if (record) {
      await this.store.set(keyCacheKey(secretHash), JSON.stringify(record), { ttlMs: keyCacheTtlMs });
      this.cache.set(secretHash, { record });
    } else {
      this.cache.set(secretHash, { record: null }, { ttl: this.negativeTtlMs });
    }
    return record;
  }
}
