import { shardTag } from '../store/shard-tags.js';
import type { Store, StoreScript } from '../store/types.js';

/** Pub/sub channel on which writers announce that a key changed (message: its secret hash). */
export const keyChangeChannel = 'keys:changed';

/** Store key of the cached key record for a secret hash, read by gateway replicas. */
export function keyCacheKey(secretHash: string): string {
  return `key:${shardTag(secretHash)}`;
}

/**
 * Store key of a hash's change counter: every announcement bumps it, and a reader may fill the
 * cache only if it is unchanged since before the reader asked PostgreSQL. Without it a reader
 * that read `active` just before a revoke would write that stale record back after the revoke's
 * eviction, and the revoked key would work until the entry expired.
 */
export function keyGenerationKey(secretHash: string): string {
  return `keygen:${shardTag(secretHash)}`;
}

/** How long a cached key record lives in the store before a replica re-reads PostgreSQL. */
export const keyCacheTtlMs = 10 * 60_000;

/**
 * Tells every replica that a key changed (or went): bumps its change counter, drops the cached
 * record and publishes. Announcements only evict, never write a record, so two announcements
 * arriving out of order cannot leave an older state cached: readers reload from PostgreSQL.
 * Throws when the store fails; the caller keeps the announcement owed (KeyAnnouncer).
 */
export async function announceKeyChange(store: Store, secretHash: string): Promise<void> {
  // Longer than any cache entry can live: a counter that expired could repeat a value a
  // reader saw, and its stale fill would pass.
  await store.incrBy(keyGenerationKey(secretHash), 1, 2 * keyCacheTtlMs);
  await store.del(keyCacheKey(secretHash));
  await store.publish(keyChangeChannel, secretHash);
}

/** The cached record (JSON) and the change counter, read together. KEYS: record, counter. */
export const readCachedKey: StoreScript<{ json: string | null; generation: string }> = {
  name: 'key_cache_read',
  lua: `return {redis.call('GET', KEYS[1]) or false, redis.call('GET', KEYS[2]) or '0'}`,
  memory(redis, keys) {
    return [redis.get(keys[0]!), redis.get(keys[1]!) ?? '0'];
  },
  decode(reply) {
    const [json, generation] = reply as [string | null | false, string];
    return { json: typeof json === 'string' ? json : null, generation: String(generation) };
  },
};

/**
 * Caches a record read from PostgreSQL unless a change was announced since the reader read the
 * counter (or another reader filled it first). KEYS: record, counter. ARGV: counter seen, JSON,
 * ttl ms. Replies 1 when written.
 */
export const fillCachedKey: StoreScript<boolean> = {
  name: 'key_cache_fill',
  lua: `
if (redis.call('GET', KEYS[2]) or '0') ~= ARGV[1] then return 0 end
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
`,
  memory(redis, keys, args) {
    if ((redis.get(keys[1]!) ?? '0') !== args[0]) return 0;
    if (redis.get(keys[0]!) !== null) return 0;
    redis.set(keys[0]!, args[1]!, Number(args[2]));
    return 1;
  },
  decode: (reply) => reply === 1,
};
