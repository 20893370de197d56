// Found by an outside probe: two gateways on one database with different SVC_STORE_PREFIX values
// each kept their own budget counter (a 2 USD budget spent 3.05) and key cache (a key revoked on
// one served for minutes on the other). A start that would split an installation is refused.
import { randomBytes } from 'node:crypto';
import { afterEach, expect, test } from 'vitest';
import { createTestDatabase } from '../db/testing.js';
import type { Database } from '../db/index.js';
import { bindStoreToDatabase, StoreBindingError } from './binding.js';
import { MemoryStore } from './memory-store.js';
import { RedisStore } from './redis-store.js';
import { deleteKeysWithPrefix, testRedisIsCluster } from './testing.js';
import type { Store } from './types.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function database(): Promise<Database> {
  const db = await createTestDatabase();
  cleanups.push(() => db.close());
  return db;
}

/**
 * Stores on one shared data set under the prefixes asked for: Redis with REDIS_URL; else one
 * memory data set seen as a shared store (the memory store itself is the process's own, never bound).
 */
function sharedRedis(): { at(prefix: string): Store; restartEmpty(): Promise<void> } {
  const base = `svc-test:${randomBytes(6).toString('hex')}:`;
  const url = process.env.REDIS_URL;
  if (url) {
    const cluster = testRedisIsCluster();
    cleanups.push(() => deleteKeysWithPrefix(url, base, { cluster }));
    return {
      at: (prefix) => {
        const store = new RedisStore(url, base + prefix, { cluster });
        cleanups.push(() => store.close());
        return store;
      },
      restartEmpty: () => deleteKeysWithPrefix(url, base, { cluster }),
    };
  }
  const memory = new MemoryStore('');
  cleanups.push(() => memory.close());
  return {
    at: (prefix) =>
      new Proxy(memory, {
        get(target, property, receiver) {
          if (property === 'kind') return 'redis';
          if (property === 'prefix') return base + prefix;
          if (property === 'runScript')
            return (script: never, keys: readonly string[], args: readonly string[]) =>
              target.runScript(
                script,
                keys.map((key) => base + prefix + key),
                args,
              );
          return Reflect.get(target, property, receiver) as unknown;
        },
      }),
    restartEmpty: async () => memory.flushAll(),
  };
}

const quiet = { warn: () => undefined };

test('the first start binds the database to its prefix; later starts on that prefix pass', async () => {
  const db = await database();
  const redis = sharedRedis();
  const store = redis.at('a:');
  await bindStoreToDatabase(db.knex, store, quiet);
  await bindStoreToDatabase(db.knex, redis.at('a:'), quiet);
  expect(await db.knex('store_binding').select('prefix')).toEqual([{ prefix: store.prefix }]);
});

test('a database bound to another prefix refuses to start, naming both prefixes and the way out', async () => {
  const db = await database();
  const redis = sharedRedis();
  const a = redis.at('a:');
  const b = redis.at('b:');
  await bindStoreToDatabase(db.knex, a, quiet);
  const refusal = bindStoreToDatabase(db.knex, b, quiet);
  await expect(refusal).rejects.toBeInstanceOf(StoreBindingError);
  await expect(refusal).rejects.toThrow(`bound to store prefix "${a.prefix}", but SVC_STORE_PREFIX is "${b.prefix}"`);
  await expect(refusal).rejects.toThrow(/SVC_STORE_REBIND=1/);
  expect(await db.knex('store_binding').select('prefix')).toEqual([{ prefix: a.prefix }]);
});

test('rebind moves the database to the new prefix with a warning; the old prefix is refused from then on', async () => {
  const db = await database();
  const redis = sharedRedis();
  const a = redis.at('a:');
  const b = redis.at('b:');
  await bindStoreToDatabase(db.knex, a, quiet);
  const warnings: string[] = [];
  await bindStoreToDatabase(db.knex, b, { rebind: true, warn: (message) => warnings.push(message) });
  expect(warnings).toEqual([expect.stringContaining(`moved from store prefix "${a.prefix}" to "${b.prefix}"`)]);
  await bindStoreToDatabase(db.knex, b, quiet);
  await expect(bindStoreToDatabase(db.knex, a, quiet)).rejects.toBeInstanceOf(StoreBindingError);
});

test('a second database on a prefix another installation uses is refused, and is left unbound', async () => {
  const first = await database();
  const second = await database();
  const redis = sharedRedis();
  await bindStoreToDatabase(first.knex, redis.at('a:'), quiet);
  await expect(bindStoreToDatabase(second.knex, redis.at('a:'), quiet)).rejects.toThrow(/belongs to another installation/);
  expect(await second.knex('store_binding').select('prefix')).toEqual([]);
  // Given a prefix of its own, it starts without a rebind.
  await bindStoreToDatabase(second.knex, redis.at('b:'), quiet);
});

test('a store restarted empty is marked again; the database stays bound', async () => {
  const db = await database();
  const redis = sharedRedis();
  await bindStoreToDatabase(db.knex, redis.at('a:'), quiet);
  await redis.restartEmpty();
  await bindStoreToDatabase(db.knex, redis.at('a:'), quiet);
  await expect(bindStoreToDatabase(db.knex, redis.at('b:'), quiet)).rejects.toBeInstanceOf(StoreBindingError);
});

test('first starts racing on one database with different prefixes: exactly one binds', async () => {
  const db = await database();
  const redis = sharedRedis();
  const outcomes = await Promise.allSettled(['a:', 'b:', 'c:'].map((p) => bindStoreToDatabase(db.knex, redis.at(p), quiet)));
  expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
  expect(await db.knex('store_binding').count<{ n: string }[]>('* as n')).toEqual([{ n: expect.anything() }]);
});

test('a store that does not answer: the database side is still checked, the store side waits for the next start', async () => {
  const db = await database();
  const redis = sharedRedis();
  const a = redis.at('a:');
  await bindStoreToDatabase(db.knex, a, quiet);
  const down = Object.assign(Object.create(redis.at('a:')) as Store, { runScript: () => Promise.reject(new Error('store down')) });
  const warnings: string[] = [];
  await bindStoreToDatabase(db.knex, down, { warn: (message) => warnings.push(message) });
  expect(warnings).toEqual([expect.stringContaining('not checked against other installations')]);
  const elsewhere = Object.assign(Object.create(redis.at('b:')) as Store, { runScript: () => Promise.reject(new Error('store down')) });
  await expect(bindStoreToDatabase(db.knex, elsewhere, quiet)).rejects.toBeInstanceOf(StoreBindingError);
});

test('the in-process store is the process’s own: nothing is bound (the embedded defaults start as before)', async () => {
  const db = await database();
  const store = new MemoryStore('svc:');
  cleanups.push(() => store.close());
  await bindStoreToDatabase(db.knex, store, quiet);
  expect(await db.knex('store_binding').select('prefix')).toEqual([]);
});
