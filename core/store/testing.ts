import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { MemoryStore } from './memory-store.js';
import { RedisStore } from './redis-store.js';
import type { Store } from './types.js';

/** Opens a Redis store under a fresh key prefix; closing it deletes every key it made. */
export function createRedisTestStore(url: string): Store {
  const prefix = `svc-test:${randomBytes(6).toString('hex')}:`;
  const store = new RedisStore(url, prefix);
  const close = store.close.bind(store);
  store.close = async () => {
    await close();
    const cleaner = new Redis(url);
    try {
      let cursor = '0';
      do {
        const [next, keys] = await cleaner.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
        cursor = next;
        if (keys.length > 0) await cleaner.del(...keys);
      } while (cursor !== '0');
    } finally {
      cleaner.disconnect();
    }
  };
  return store;
}

/** The store a test should use: isolated Redis when REDIS_URL is set, else in-process memory. */
export function createTestStore(env: Record<string, string | undefined> = process.env): Store {
  return env.REDIS_URL ? createRedisTestStore(env.REDIS_URL) : new MemoryStore('test:');
}
