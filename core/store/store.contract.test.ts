import { afterAll, beforeAll, describe, test } from 'vitest';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { waitFor } from '../../test/support/wait-for.js';
import { MemoryStore } from './memory-store.js';
import { redisSeedUrls } from './redis-store.js';
import { createRedisTestStore, testRedisIsCluster } from './testing.js';
import type { Store, StoreScript } from './types.js';

/** Stream ids (`<ms>-<seq>`) in the order Redis gives them. */
function compareStreamIds(a: string, b: string): number {
  const [aMs, aSeq] = a.split('-').map(Number) as [number, number];
  const [bMs, bSeq] = b.split('-').map(Number) as [number, number];
  return aMs - bMs || aSeq - bSeq;
}

/** Sets both KEYS to ARGV[1]. */
const setBoth: StoreScript<void> = {
  name: 'contract_set_both',
  lua: "redis.call('SET', KEYS[1], ARGV[1]) redis.call('SET', KEYS[2], ARGV[1]) return 0",
  memory(redis, keys, args) {
    redis.set(keys[0]!, args[0]!);
    redis.set(keys[1]!, args[0]!);
    return 0;
  },
  decode: () => undefined,
};

interface Opened {
  store: Store;
  /** Whether a stream read of this store is blocked waiting for entries right now. */
  readerBlocked(): Promise<boolean>;
  close(): Promise<void>;
}

/** The behaviour every Store must have; run against each implementation below. */
function storeContract(name: string, open: () => Opened): void {
  describe(`store contract: ${name}`, () => {
    let opened: Opened;
    let store: Store;
    beforeAll(() => {
      opened = open();
      store = opened.store;
    });
    afterAll(async () => {
      await opened.close();
    });

    test('values: set, get, del, expiry', async () => {
      await store.set('a', '1');
      assert.equal(await store.get('a'), '1');
      assert.equal(await store.pttl('a'), -1);
      assert.equal(await store.pttl('missing'), -2);
      await store.set('long', 'x', { ttlMs: 600_000 });
      const longTtl = await store.pttl('long');
      assert.ok(longTtl > 0 && longTtl <= 600_000, `a value set with an expiry has it (${longTtl} ms left)`);
      const setAt = Date.now();
      await store.set('short', 'x', { ttlMs: 300 });
      const seen = await store.get('short');
      // On a very busy machine the 300 ms may be over before the read: then only expiry is seen.
      if (Date.now() - setAt < 300) assert.equal(seen, 'x', 'there until it expires');
      await waitFor('the short-lived value to expire', async () => (await store.get('short')) === null);
      assert.equal(await store.pttl('short'), -2, 'gone, not only hidden');
      assert.equal(await store.get('long'), 'x', 'a value with a longer expiry is still there');
      assert.equal(await store.del('a', 'missing'), 1);
      assert.equal(await store.get('a'), null);
    });

    test('counters: incrBy sets expiry only when created', async () => {
      assert.equal(await store.incrBy('c', 2, 10_000), 2);
      assert.equal(await store.incrBy('c', 3, 50), 5);
      assert.ok((await store.pttl('c')) > 5_000, 'second call must not shorten the first expiry');
      assert.equal(await store.incrBy('c', -5), 0);
    });

    test('scripts: keys of one shard tag run together; a sharded store refuses keys of several (CROSSSLOT)', async () => {
      await store.runScript(setBoth, ['pair:{e1}:a', 'pair:{e1}:b'], ['x']);
      assert.equal(await store.get('pair:{e1}:a'), 'x');
      assert.equal(await store.get('pair:{e1}:b'), 'x');
      const across = store.runScript(setBoth, ['pair:{e1}:a', 'pair:{e2}:b'], ['y']);
      // Redis says CROSSSLOT; ioredis's cluster client may refuse before sending ("same slot").
      if (store.sharded) await assert.rejects(across, /CROSSSLOT|same slot/);
      else await across;
      assert.equal(await store.get('pair:{e1}:a'), store.sharded ? 'x' : 'y', 'a refused script wrote nothing');
      // Whatever the shards, del takes keys of many entities at once.
      await store.set('pair:{e2}:c', 'z');
      assert.equal(await store.del('pair:{e1}:a', 'pair:{e1}:b', 'pair:{e2}:c', 'pair:{e3}:missing'), 3);
    });

    test('streams: consumer group delivers once, acks, and hands idle entries to another consumer', async () => {
      await store.streamCreateGroup('audit', 'writers');
      await store.streamCreateGroup('audit', 'writers'); // idempotent
      const id1 = await store.streamAdd('audit', { n: '1' });
      await store.streamAdd('audit', { n: '2' });
      const first = await store.streamReadGroup('audit', 'writers', 'w1', { count: 10, blockMs: 50 });
      assert.deepEqual(
        first.map((e) => e.fields.n),
        ['1', '2'],
      );
      assert.equal(first[0]!.id, id1);
      assert.deepEqual(await store.streamReadGroup('audit', 'writers', 'w1', { count: 10, blockMs: 20 }), []);
      assert.equal(await store.streamAck('audit', 'writers', [id1]), 1);
      assert.deepEqual(await store.streamGroupInfo('audit', 'writers'), { length: 2, pending: 1 });
      // w1 "crashed" holding entry 2: after the idle time w2 claims it.
      assert.deepEqual(await store.streamClaimIdle('audit', 'writers', 'w2', { minIdleMs: 10_000, count: 10 }), []);
      let claimed: { id: string; fields: Record<string, string> }[] = [];
      await waitFor(
        'entry 2 to be idle for 20 ms and claimed',
        async () => (claimed = await store.streamClaimIdle('audit', 'writers', 'w2', { minIdleMs: 20, count: 10 })).length > 0,
      );
      assert.deepEqual(
        claimed.map((e) => e.fields.n),
        ['2'],
      );
      await store.streamAck(
        'audit',
        'writers',
        claimed.map((e) => e.id),
      );
      assert.equal(await store.streamDelete('audit', [id1]), 1);
      assert.deepEqual(await store.streamGroupInfo('audit', 'writers'), { length: 1, pending: 0 });
    });

    test('streams: several entries added in one call keep their order, fields and ids; MAXLEN trims', async () => {
      await store.streamCreateGroup('many', 'g');
      assert.deepEqual(await store.streamAddMany('many', []), []);
      const [single] = await store.streamAddMany('many', [{ n: '0' }]);
      const ids = await store.streamAddMany('many', [{ n: '1', extra: 'x' }, { n: '2' }, { n: '3', a: 'b', c: 'd' }]);
      assert.equal(ids.length, 3);
      const all = [single!, ...ids];
      assert.deepEqual([...all].sort(compareStreamIds), all, 'ids increase in the order given');
      const read = await store.streamReadGroup('many', 'g', 'c', { count: 10, blockMs: 20 });
      assert.deepEqual(
        read.map((e) => [e.id, e.fields]),
        [
          [single, { n: '0' }],
          [ids[0], { n: '1', extra: 'x' }],
          [ids[1], { n: '2' }],
          [ids[2], { n: '3', a: 'b', c: 'd' }],
        ],
      );
      // MAXLEN ~ trims approximately on Redis; the memory store trims exactly. Either way the
      // newest entries survive and the stream stays far below what was added.
      const added = Array.from({ length: 300 }, (_, i) => ({ n: String(i) }));
      const trimmedIds = await store.streamAddMany('many-trimmed', added, { maxLen: 10 });
      assert.equal(trimmedIds.length, 300);
      await store.streamCreateGroup('many-trimmed', 'g');
      const left = await store.streamReadGroup('many-trimmed', 'g', 'c', { count: 1000, blockMs: 20 });
      assert.ok(left.length >= 10 && left.length < 300, `MAXLEN 10 left ${left.length} of 300 entries`);
      assert.equal(left.at(-1)!.fields.n, '299');
    });

    test('streams: a blocked reader wakes when an entry arrives', async () => {
      await store.streamCreateGroup('wake', 'g');
      const blockMs = 20_000;
      let blockTimer: NodeJS.Timeout | undefined;
      const blockEnded = new Promise<'the block ran out'>(
        (resolve) => (blockTimer = setTimeout(() => resolve('the block ran out'), blockMs)),
      );
      try {
        const reading = store.streamReadGroup('wake', 'g', 'c', { count: 1, blockMs });
        await waitFor('the reader to block', () => opened.readerBlocked());
        await store.streamAdd('wake', { hello: 'world' });
        assert.equal(
          await Promise.race([reading.then(() => 'woken' as const), blockEnded]),
          'woken',
          'the entry ends the wait, not the block time',
        );
        assert.deepEqual(
          (await reading).map((e) => e.fields),
          [{ hello: 'world' }],
        );
      } finally {
        clearTimeout(blockTimer);
      }
    });

    test('pub/sub: subscribers get messages until they unsubscribe', async () => {
      const got: string[] = [];
      const witness: string[] = [];
      const unsubscribe = await store.subscribe('keys-changed', (m) => got.push(m));
      const unsubscribeWitness = await store.subscribe('keys-changed', (m) => witness.push(m));
      await store.publish('keys-changed', 'k1');
      await waitFor('k1', () => got.length > 0);
      assert.deepEqual(got, ['k1']);
      await unsubscribe();
      await store.publish('keys-changed', 'k2');
      // A subscriber still listening has k2, so the other would have had it by now too.
      await waitFor('k2 at the remaining subscriber', () => witness.includes('k2'));
      assert.deepEqual(got, ['k1']);
      await unsubscribeWitness();
    });
  });
}

storeContract('memory', () => {
  const store = new MemoryStore('t:');
  // MemoryStore registers a blocked read before streamReadGroup returns its promise.
  return { store, readerBlocked: async () => true, close: () => store.close() };
});
storeContract('memory (sharded, as a cluster)', () => {
  const store = new MemoryStore('t:', Date.now, { sharded: true });
  return { store, readerBlocked: async () => true, close: () => store.close() };
});
if (process.env.REDIS_URL) {
  const url = process.env.REDIS_URL;
  const cluster = testRedisIsCluster();
  storeContract(cluster ? 'redis cluster' : 'redis', () => {
    // Every connection of this store (its blocking readers are duplicates) carries this name,
    // so CLIENT LIST (on every node of a cluster) shows when one of them is blocked.
    const connectionName = `store-contract-${randomBytes(4).toString('hex')}`;
    const named = redisSeedUrls(url).map((seed) => {
      const withName = new URL(seed);
      withName.searchParams.set('connectionName', connectionName);
      return withName.toString();
    });
    const store = createRedisTestStore(named.join(','), { cluster });
    const probes = redisSeedUrls(url).map((seed) => new Redis(seed));
    return {
      store,
      readerBlocked: async () => {
        const lists = await Promise.all(probes.map(async (probe) => String(await probe.call('CLIENT', 'LIST')).split('\n')));
        return lists.flat().some((c) => c.includes(` name=${connectionName} `) && / flags=\S*b/.test(c) && c.includes(' cmd=xreadgroup'));
      },
      close: async () => {
        for (const probe of probes) probe.disconnect();
        await store.close();
      },
    };
  });
}
