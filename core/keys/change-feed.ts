import type { Store } from '../store/types.js';
import type { KeyRecord } from './record.js';

/** Pub/sub channel on which writers announce that a key changed (message: its secret hash). */
export const keyChangeChannel = 'keys:changed';

/** Store key of the cached key record for a secret hash, read by gateway replicas. */
export function keyCacheKey(secretHash: string): string {
  return `key:${secretHash}`;
}

/** How long a cached key record lives in the store before a replica re-reads PostgreSQL. */
export const keyCacheTtlMs = 10 * 60_000;

/** Writes the current record to the store cache (or drops it) and tells every replica to re-read. */
export async function announceKeyChange(store: Store, secretHash: string, record: KeyRecord | undefined): Promise<void> {
  if (record) await store.set(keyCacheKey(secretHash), JSON.stringify(record), { ttlMs: keyCacheTtlMs });
  else await store.del(keyCacheKey(secretHash));
  await store.publish(keyChangeChannel, secretHash);
}
