import { afterAll, beforeAll, describe, test } from 'vitest';
import assert from 'node:assert/strict';
import { MemoryStore } from './memory-store.js';
import { createRedisTestStore } from './testing.js';
import type { Store } from './types.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The behaviour every Store must have; run against each implementation below. */
function storeContract(name: string, open: () => Store): void {
  describe(`store contract: ${name}`, () => {
    let store: Store;
    beforeAll(() => {
      store = open();
    });
    afterAll(async () => {
      await store.close();
    });

    test('values: set, get, del, expiry', async () => {
      await store.set('a', '1');
      assert.equal(await store.get('a'), '1');
      assert.equal(await store.pttl('a'), -1);
      assert.equal(await store.pttl('missing'), -2);
      await store.set('short', 'x', { ttlMs: 60 });
      assert.ok((await store.pttl('short')) > 0);
      await sleep(120);
      assert.equal(await store.get('short'), null);
      assert.equal(await store.del('a', 'missing'), 1);
      assert.equal(await store.get('a'), null);
    });

    test('counters: incrBy sets expiry only when created', async () => {
      assert.equal(await store.incrBy('c', 2, 10_000), 2);
      assert.equal(await store.incrBy('c', 3, 50), 5);
      assert.ok((await store.pttl('c')) > 5_000, 'second call must not shorten the first expiry');
      assert.equal(await store.incrBy('c', -5), 0);
    });

    test('streams: consumer group delivers once, acks, and hands idle entries to another consumer', async () => {
      await store.streamCreateGroup('audit', 'writers');
      await store.streamCreateGroup('audit', 'writers'); // idempotent
      const id1 = await store.streamAdd('audit', { n: '1' });
      await store.streamAdd('audit', { n: '2' });
      const first = await store.streamReadGroup('audit', 'writers', 'w1', { count: 10, blockMs: 50 });
      assert.deepEqual(first.map((e) => e.fields.n), ['1', '2']);
      assert.equal(first[0]!.id, id1);
      assert.deepEqual(await store.streamReadGroup('audit', 'writers', 'w1', { count: 10, blockMs: 20 }), []);
      assert.equal(await store.streamAck('audit', 'writers', [id1]), 1);
      assert.deepEqual(await store.streamGroupInfo('audit', 'writers'), { length: 2, pending: 1 });
      // w1 "crashed" holding entry 2: after the idle time w2 claims it.
      assert.deepEqual(await store.streamClaimIdle('audit', 'writers', 'w2', { minIdleMs: 10_000, count: 10 }), []);
      await sleep(30);
      const claimed = await store.streamClaimIdle('audit', 'writers', 'w2', { minIdleMs: 20, count: 10 });
      assert.deepEqual(claimed.map((e) => e.fields.n), ['2']);
      await store.streamAck('audit', 'writers', claimed.map((e) => e.id));
      assert.equal(await store.streamDelete('audit', [id1]), 1);
      assert.deepEqual(await store.streamGroupInfo('audit', 'writers'), { length: 1, pending: 0 });
    });

    test('streams: a blocked reader wakes when an entry arrives', async () => {
      await store.streamCreateGroup('wake', 'g');
      const started = Date.now();
      const reading = store.streamReadGroup('wake', 'g', 'c', { count: 1, blockMs: 5_000 });
      await sleep(50);
      await store.streamAdd('wake', { hello: 'world' });
      const entries = await reading;
      assert.deepEqual(entries.map((e) => e.fields), [{ hello: 'world' }]);
      assert.ok(Date.now() - started < 4_000);
    });

    test('pub/sub: subscribers get messages until they unsubscribe', async () => {
      const got: string[] = [];
      const unsubscribe = await store.subscribe('keys-changed', (m) => got.push(m));
      await store.publish('keys-changed', 'k1');
      for (let i = 0; i < 50 && got.length < 1; i++) await sleep(10);
      assert.deepEqual(got, ['k1']);
      await unsubscribe();
      await store.publish('keys-changed', 'k2');
      await sleep(50);
      assert.deepEqual(got, ['k1']);
    });
  });
}

storeContract('memory', () => new MemoryStore('t:'));
if (process.env.REDIS_URL) {
  const url = process.env.REDIS_URL;
  storeContract('redis', () => createRedisTestStore(url));
}
