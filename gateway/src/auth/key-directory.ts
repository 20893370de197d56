import { LRUCache } from 'lru-cache';
import {
  fillCachedKey,
  keyCacheKey,
  keyCacheTtlMs,
  keyChangeChannel,
  keyGenerationKey,
  readCachedKey,
  type KeyRecord,
  type KeyRepository,
} from '../../../core/keys/index.js';
import type { Store } from '../../../core/store/index.js';
import { KnownKeys } from './known-keys.js';

/** Tuning for the in-process key cache. */
export interface KeyDirectoryOptions {
  maxEntries?: number;
  /** How long a found key is trusted without asking the store (pub/sub evicts sooner). */
  positiveTtlMs?: number;
  /** How long an unknown hash is remembered, so a flood of bad keys does not reach PostgreSQL. */
  negativeTtlMs?: number;
  /** How often, at most, a hash missing from the known-keys index re-reads changed keys. */
  knownKeysRefreshMs?: number;
  /**
   * How long a key read from PostgreSQL while the store was unreachable is trusted: without the
   * store there is no pub/sub, so this bounds how long a change made meanwhile goes unseen.
   */
  degradedTtlMs?: number;
  /** Told every change announced by another process or made here (by secret hash), after the eviction. */
  onChange?: (secretHash: string) => void;
}

/**
 * Finds the key for a secret hash: in-process LRU first (no I/O on the hot path), then the
 * shared store, then PostgreSQL (which refills the store). Writers announce changes on the
 * store's pub/sub channel and every replica evicts at once. A refill is conditional on the
 * key's change counter (core/keys/change-feed.ts), so a record read before a revoke can never
 * be cached after it. When the store is unreachable, keys are read from PostgreSQL directly.
 */
export class KeyDirectory {
  private readonly cache: LRUCache<string, { record: KeyRecord | null }>;
  private readonly negativeTtlMs: number;
  private readonly degradedTtlMs: number;
  /** Evictions heard so far: a look-up that overlapped one does not cache what it read. */
  private evictions = 0;
  private unsubscribe: (() => Promise<void>) | undefined;
  private readonly known: KnownKeys;
  private readonly onChange: ((secretHash: string) => void) | undefined;

  constructor(
    private readonly store: Store,
    private readonly repository: KeyRepository,
    options: KeyDirectoryOptions = {},
  ) {
    this.cache = new LRUCache({ max: options.maxEntries ?? 50_000, ttl: options.positiveTtlMs ?? 60_000 });
    this.negativeTtlMs = options.negativeTtlMs ?? 5_000;
    this.degradedTtlMs = options.degradedTtlMs ?? 5_000;
    this.known = new KnownKeys(repository, { refreshMs: options.knownKeysRefreshMs ?? 250 });
    this.onChange = options.onChange;
  }

  /** Subscribes to key changes and loads the known-keys index; call once before serving. */
  async start(): Promise<void> {
    this.unsubscribe = await this.store.subscribe(keyChangeChannel, (secretHash) => {
      this.known.add(secretHash); // an announced hash may be a key just created elsewhere
      this.evict(secretHash);
    });
    // Without the index every unknown hash is looked up, as before; it is retried on use.
    await this.known.load().catch(() => undefined);
  }

  async stop(): Promise<void> {
    await this.unsubscribe?.();
  }

  /** Forgets what this process holds for a hash (a change heard, or made here) and knows it may exist. */
  evict(secretHash: string): void {
    this.known.add(secretHash);
    this.evictions++;
    this.cache.delete(secretHash);
    this.onChange?.(secretHash);
  }

  /** The key for this hash, or undefined when no key has it. */
  async find(secretHash: string): Promise<KeyRecord | undefined> {
    const hit = this.cache.get(secretHash);
    if (hit) return hit.record ?? undefined;
    // A guessed key is refused here, without a store or database round trip.
    if (!(await this.known.mayExist(secretHash))) return undefined;
    const evictionsBefore = this.evictions;
    let cached: { json: string | null; generation: string };
    try {
      cached = await this.store.runScript(readCachedKey, [keyCacheKey(secretHash), keyGenerationKey(secretHash)], []);
    } catch {
      return this.findWithoutStore(secretHash, evictionsBefore);
    }
    if (cached.json) {
      const record = JSON.parse(cached.json) as KeyRecord;
      if (this.evictions === evictionsBefore) this.cache.set(secretHash, { record });
      return record;
    }
    const record = await this.repository.findByHash(secretHash);
    if (record) {
      const filled = await this.store
        .runScript(
          fillCachedKey,
          [keyCacheKey(secretHash), keyGenerationKey(secretHash)],
          [cached.generation, JSON.stringify(record), keyCacheTtlMs],
        )
        .catch(() => false);
      // Not filled: a change was announced while PostgreSQL was read (or the store failed), so
      // this answer serves this request only.
      if (filled && this.evictions === evictionsBefore) this.cache.set(secretHash, { record });
    } else if (this.evictions === evictionsBefore) {
      this.cache.set(secretHash, { record: null }, { ttl: this.negativeTtlMs });
    }
    return record;
  }

  /** The store is unreachable: PostgreSQL answers, trusted only briefly (no pub/sub meanwhile). */
  private async findWithoutStore(secretHash: string, evictionsBefore: number): Promise<KeyRecord | undefined> {
    const record = await this.repository.findByHash(secretHash);
    if (this.evictions === evictionsBefore)
      this.cache.set(secretHash, { record: record ?? null }, { ttl: Math.min(this.degradedTtlMs, record ? Infinity : this.negativeTtlMs) });
    return record;
  }
}
