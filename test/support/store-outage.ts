import { randomBytes } from 'node:crypto';
import { MemoryStore } from '../../core/store/memory-store.js';
import { RedisStore } from '../../core/store/redis-store.js';
import { deleteKeysWithPrefix } from '../../core/store/testing.js';
import type { Store } from '../../core/store/types.js';
import { startTcpProxy } from './tcp-proxy.js';

/** A store a test can take away and give back, or empty, as a Redis outage would. */
export interface OutageStore {
  /** The store the gateway uses (through the cut-able path). */
  store: Store;
  /** Another store object over the same data (a second replica); closed by close(). */
  another(): Store;
  /** Every command fails until restore(). */
  cut(): Promise<void>;
  restore(): Promise<void>;
  /**
   * Redis only: from now on nothing is answered and nothing refused (a frozen Redis, or a
   * network dropping its packets) until heal(). Undefined for the in-process store, which has
   * no connection to partition.
   */
  partition?: () => void;
  heal?: () => void;
  /**
   * Loses every key, stream and group of this test, as a Redis restarted without persistence
   * would. On Redis only this test's key prefix is deleted (other processes share the server).
   */
  flush(): Promise<void>;
  close(): Promise<void>;
}

/**
 * With REDIS_URL: RedisStore objects over a fresh key prefix, connected through a loopback TCP
 * proxy that cut() severs. Without it: one MemoryStore seen through a view whose every command
 * fails while cut, with the message ioredis gives for a closed connection.
 */
export async function openOutageStore(
  env: Record<string, string | undefined> = process.env,
  options: { timeoutMs?: number } = {},
): Promise<OutageStore> {
  const url = env.REDIS_URL;
  if (url) {
    const target = new URL(url);
    const proxy = await startTcpProxy(Number(target.port || 6379));
    const through = `redis://${new URL(proxy.url).host}${target.pathname}`;
    const prefix = `svc-test:${randomBytes(6).toString('hex')}:`;
    const stores: Store[] = [];
    const open = () => {
      const store = new RedisStore(through, prefix, { timeoutMs: options.timeoutMs });
      stores.push(store);
      return store;
    };
    const store = open();
    return {
      store,
      another: open,
      cut: () => proxy.cut(),
      restore: () => proxy.restore(),
      partition: () => proxy.blackHole(),
      heal: () => proxy.heal(),
      flush: () => deleteKeysWithPrefix(url, prefix),
      close: async () => {
        await proxy.restore(); // so that closing the clients is not a wait for reconnection
        await Promise.all(stores.map((s) => s.close().catch(() => undefined)));
        await proxy.close();
        await deleteKeysWithPrefix(url, prefix);
      },
    };
  }
  const memory = new MemoryStore('test:');
  let down = false;
  const view = new Proxy(memory, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function' || property === 'close' || property === 'kind') return value;
      return (...args: unknown[]) => {
        if (down) return Promise.reject(new Error('Connection is closed.'));
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return {
    store: view,
    another: () => view,
    cut: async () => {
      down = true;
    },
    restore: async () => {
      down = false;
    },
    flush: async () => memory.flushAll(),
    close: () => memory.close(),
  };
}
