import { MemoryStore } from './memory-store.js';
import { RedisStore } from './redis-store.js';
import type { Store } from './types.js';

export * from './types.js';
export { MemoryStore } from './memory-store.js';
export { RedisStore } from './redis-store.js';
export { countStoreErrors } from './error-counting.js';

export * from './shard-tags.js';

/** Opens the store the settings point at: Redis (a server or a cluster) when REDIS_URL is set, else in-process memory. */
export function openStore(settings: {
  REDIS_URL?: string | undefined;
  SVC_REDIS_CLUSTER?: boolean;
  SVC_STORE_PREFIX: string;
  SVC_STORE_TIMEOUT_MS?: number;
}): Store {
  return settings.REDIS_URL
    ? new RedisStore(settings.REDIS_URL, settings.SVC_STORE_PREFIX, {
        cluster: settings.SVC_REDIS_CLUSTER === true,
        timeoutMs: settings.SVC_STORE_TIMEOUT_MS,
      })
    : new MemoryStore(settings.SVC_STORE_PREFIX);
}
export { bindAtStart, bindStoreToDatabase, StoreBindingError } from './binding.js';
