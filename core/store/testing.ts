import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { MemoryStore } from './memory-store.js';
import { RedisStore } from './redis-store.js';
import type { Store } from './types.js';

/**
 * Test stores over one fresh data set: `main`, and `another()` for a second replica — with
 * REDIS_URL, separate RedisStore objects on one fresh key prefix (deleted when `main` closes),
 * as two pods would have; without it, the one MemoryStore object.
 */
export function openSharedTestStores(env: Record<string, string | undefined> = process.env): { main: Store; another(): Store } {
  const url = env.REDIS_URL;
  if (!url) {
    const memory = new MemoryStore('test:');
    return { main: memory, another: () => memory };
  }
  const prefix = `svc-test:${randomBytes(6).toString('hex')}:`;
  const main = new RedisStore(url, prefix);
  const close = main.close.bind(main);
  main.close = async () => {
    await close();
    await deleteKeysWithPrefix(url, prefix);
  };
  return { main, another: () => new RedisStore(url, prefix) };
}

/** Deletes every Redis key under `prefix` (tests and benchmarks clean up after themselves). */
export async function deleteKeysWithPrefix(url: string, prefix: string): Promise<void> {
  const redis = new Redis(url);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

/** Opens a Redis store under a fresh key prefix; closing it deletes every key it made. */
export function createRedisTestStore(url: string): Store {
  return openSharedTestStores({ REDIS_URL: url }).main;
}

/** The store a test should use: isolated Redis when REDIS_URL is set, else in-process memory. */
export function createTestStore(env: Record<string, string | undefined> = process.env): Store {
  return env.REDIS_URL ? createRedisTestStore(env.REDIS_URL) : new MemoryStore('test:');
}
