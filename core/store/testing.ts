import { randomBytes } from 'node:crypto';
import { Cluster, Redis } from 'ioredis';
import { flag } from '../config/settings.js';
import { MemoryStore } from './memory-store.js';
import { clusterSeedNodes, RedisStore } from './redis-store.js';
import type { Store } from './types.js';

/** Whether the environment's REDIS_URL is a Redis Cluster (SVC_REDIS_CLUSTER, as the deployables read it). */
export function testRedisIsCluster(env: Record<string, string | undefined> = process.env): boolean {
  return flag(false).parse(env.SVC_REDIS_CLUSTER);
}

/**
 * Test stores over one fresh data set: `main`, and `another()` for a second replica — with
 * REDIS_URL (a server, or a cluster with SVC_REDIS_CLUSTER), separate RedisStore objects on one
 * fresh key prefix (deleted when `main` closes), as two pods would have; without it, the one
 * MemoryStore object.
 */
export function openSharedTestStores(env: Record<string, string | undefined> = process.env): { main: Store; another(): Store } {
  const url = env.REDIS_URL;
  const cluster = testRedisIsCluster(env);
  if (!url) {
    // SVC_REDIS_CLUSTER without a URL: the memory store refusing cross-shard scripts, as a cluster would.
    const memory = new MemoryStore('test:', Date.now, { sharded: cluster });
    return { main: memory, another: () => memory };
  }
  const prefix = `svc-test:${randomBytes(6).toString('hex')}:`;
  const main = new RedisStore(url, prefix, { cluster });
  const close = main.close.bind(main);
  main.close = async () => {
    await close();
    await deleteKeysWithPrefix(url, prefix, { cluster });
  };
  return { main, another: () => new RedisStore(url, prefix, { cluster }) };
}

/**
 * Deletes every Redis key under `prefix` (tests and benchmarks clean up after themselves); on a
 * cluster (by default when the environment says SVC_REDIS_CLUSTER), on every master.
 */
export async function deleteKeysWithPrefix(
  url: string,
  prefix: string,
  options: { cluster?: boolean } = { cluster: testRedisIsCluster() },
): Promise<void> {
  if (!options.cluster) {
    const redis = new Redis(url);
    try {
      await deleteMatching(redis, prefix);
    } finally {
      redis.disconnect();
    }
    return;
  }
  const cluster = new Cluster(clusterSeedNodes(url));
  try {
    await new Promise<void>((resolve, reject) => {
      cluster.once('ready', resolve);
      cluster.once('error', reject);
    });
    await Promise.all(cluster.nodes('master').map((node) => deleteMatching(node, prefix)));
  } finally {
    cluster.disconnect();
  }
}

async function deleteMatching(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
    cursor = next;
    // One DEL per key: on a cluster node the keys of one scan sit in many slots.
    await Promise.all(keys.map((key) => redis.del(key)));
  } while (cursor !== '0');
}

/** Opens a Redis store under a fresh key prefix; closing it deletes every key it made. */
export function createRedisTestStore(url: string, options: { cluster?: boolean } = {}): Store {
  return openSharedTestStores({ REDIS_URL: url, SVC_REDIS_CLUSTER: options.cluster ? 'true' : 'false' }).main;
}

/** The store a test should use: isolated Redis (or Redis Cluster) when REDIS_URL is set, else in-process memory (sharded with SVC_REDIS_CLUSTER). */
export function createTestStore(env: Record<string, string | undefined> = process.env): Store {
  return openSharedTestStores(env).main;
}
