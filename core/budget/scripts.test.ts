import { afterAll, describe, test } from 'vitest';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { MemoryStore } from '../store/memory-store.js';
import { createRedisTestStore, testRedisIsCluster } from '../store/testing.js';
import type { Store } from '../store/types.js';
import { loadBudgetIfAbsent } from './recovery.js';
import { enforceRequest, reservedField, settleReservation } from './scripts.js';

// One shard tag for every key, so the scripts also run on Redis Cluster (SVC_REDIS_CLUSTER).
const keys = ['rate:{t}', 'budget:{t}', 'wallet:{t}', 'leases:{t}'];
/** The minute the tests' enforcement runs in, and the minute its reservations' leases end. */
const minute = 29_000_000;
const leaseEnd = minute + 15;
/** ARGV for enforceRequest. */
function args(o: {
  rpm?: number;
  reserve: number;
  cap?: number;
  bucket?: number;
  minBucket?: number;
  wallet?: boolean;
  /** Spend groups' counter ttls (their keys follow `keys`). */
  groupTtls?: number[];
  now?: number;
  leaseEnd?: number;
  holder?: string;
}): (string | number)[] {
  const groups = o.groupTtls ?? [];
  const head = [o.rpm ?? 0, 60_000, randomUUID(), o.reserve, o.cap ?? -1, o.minBucket ?? 0, o.bucket ?? 0, 86_400_000, o.wallet ? 1 : 0];
  return [...head, groups.length, 0, o.now ?? minute, o.leaseEnd ?? leaseEnd, o.holder ?? 'g1', ...groups];
}

/**
 * A lease field of the tests' reservations (core/budget/leases.ts): held by gateway `g1`, on a
 * counter's first generation (`0`: the tests' counters are loaded without one), unless named.
 */
const lease = (bucket = 0, end = leaseEnd, holder = 'g1', generation = '0') => `lease:${end}:${bucket}:${holder}:${generation}`;

/** ARGV for settleReservation (bucket 0): its reservation's lease fields as `lease()` names them. */
function settleArgs(
  reserve: number,
  actual: number,
  o: { budget?: boolean; wallet?: boolean; groups?: number; leaseEnd?: number; holder?: string; generation?: string } = { budget: true },
): (string | number)[] {
  const field = lease(0, o.leaseEnd ?? leaseEnd, o.holder ?? 'g1', o.generation ?? '0');
  const groups = Array.from({ length: o.groups ?? 0 }, () => field);
  return [0, reserve, actual, o.budget ? 1 : 0, o.wallet ? 1 : 0, 60_000, o.groups ?? 0, field, field, ...groups];
}

/** The counter as a rebuild leaves it for a key that has spent nothing. */
async function emptyCounter(store: Store, bucket = 0): Promise<void> {
  await store.runScript(loadBudgetIfAbsent, ['budget:{t}'], [86_400_000, bucket, 0]);
}

/** KEYS of settleReservation with a fresh settlement marker. */
function settleKeys(): string[] {
  return ['budget:{t}', 'wallet:{t}', `settled:{t}:${randomUUID()}`, 'leases:{t}'];
}

function enforcementContract(name: string, open: () => Store): void {
  describe(`enforcement scripts: ${name}`, () => {
    const stores: Store[] = [];
    const fresh = () => {
      const s = open();
      stores.push(s);
      return s;
    };
    afterAll(async () => {
      await Promise.all(stores.map((s) => s.close()));
    });

    test('200 concurrent reservations against a budget covering 10: exactly 10 admitted, never above the cap', async () => {
      const store = fresh();
      await emptyCounter(store);
      const verdicts = await Promise.all(
        Array.from({ length: 200 }, () => store.runScript(enforceRequest, keys, args({ reserve: 1_000, cap: 10_000 }))),
      );
      assert.equal(verdicts.filter((v) => v.kind === 'admitted').length, 10);
      assert.ok(verdicts.filter((v) => v.kind !== 'admitted').every((v) => v.kind === 'budget_exceeded'));
      assert.deepEqual(await store.hashGetAll('budget:{t}'), { '0': '10000', [reservedField]: '10000', [lease()]: '10000' });
    });

    test('a missing budget counter is budget_unknown and reserves nothing; a rebuilt one is never overwritten', async () => {
      const store = fresh();
      assert.deepEqual(await store.runScript(enforceRequest, keys, args({ reserve: 1_000, cap: 10_000 })), { kind: 'budget_unknown' });
      assert.deepEqual(await store.hashGetAll('budget:{t}'), {});
      assert.equal(await store.runScript(loadBudgetIfAbsent, ['budget:{t}'], [86_400_000, 0, 9_500]), true);
      assert.equal(await store.runScript(loadBudgetIfAbsent, ['budget:{t}'], [86_400_000, 0, 0]), false);
      assert.equal((await store.runScript(enforceRequest, keys, args({ reserve: 1_000, cap: 10_000 }))).kind, 'budget_exceeded');
    });

    test('a settlement applied twice (a retry after a lost reply) counts once', async () => {
      const store = fresh();
      await emptyCounter(store);
      await store.runScript(enforceRequest, keys, args({ reserve: 5_000, cap: 10_000 }));
      const once = settleKeys();
      await store.runScript(settleReservation, once, settleArgs(5_000, 1_200));
      await store.runScript(settleReservation, once, settleArgs(5_000, 1_200));
      assert.deepEqual(await store.hashGetAll('budget:{t}'), { '0': '1200', [reservedField]: '0' });
    });

    test('settling returns the unspent part; releasing returns all of it', async () => {
      const store = fresh();
      await emptyCounter(store);
      await store.runScript(enforceRequest, keys, args({ reserve: 5_000, cap: 10_000 }));
      await store.runScript(settleReservation, settleKeys(), settleArgs(5_000, 1_200));
      assert.deepEqual(await store.hashGetAll('budget:{t}'), { '0': '1200', [reservedField]: '0' });
      await store.runScript(enforceRequest, keys, args({ reserve: 5_000, cap: 10_000 }));
      await store.runScript(settleReservation, settleKeys(), settleArgs(5_000, 0));
      assert.deepEqual(await store.hashGetAll('budget:{t}'), { '0': '1200', [reservedField]: '0' });
    });

    test('rate limit: rpm admitted per window, refusal says when to retry and reserves nothing', async () => {
      const store = fresh();
      await emptyCounter(store);
      const verdicts = [];
      for (let i = 0; i < 4; i++) verdicts.push(await store.runScript(enforceRequest, keys, args({ rpm: 3, reserve: 10, cap: 1_000 })));
      assert.deepEqual(
        verdicts.map((v) => v.kind),
        ['admitted', 'admitted', 'admitted', 'rate_limited'],
      );
      const refused = verdicts[3]!;
      assert.ok(refused.kind === 'rate_limited' && refused.retryAfterMs > 0 && refused.retryAfterMs <= 60_000);
      assert.deepEqual(await store.hashGetAll('budget:{t}'), { '0': '30', [reservedField]: '30', [lease()]: '30' });
    });

    test('wallet: unknown until loaded, refused when short, reserved and refunded', async () => {
      const store = fresh();
      assert.deepEqual(await store.runScript(enforceRequest, keys, args({ reserve: 100, wallet: true })), { kind: 'wallet_unknown' });
      await store.set('wallet:{t}', '150');
      assert.deepEqual(await store.runScript(enforceRequest, keys, args({ reserve: 100, wallet: true })), {
        kind: 'admitted',
        generations: { budget: '', wallet: '0', groups: [] },
      });
      assert.deepEqual(await store.runScript(enforceRequest, keys, args({ reserve: 100, wallet: true })), {
        kind: 'wallet_empty',
        balanceNano: 50,
      });
      assert.deepEqual(await store.hashGetAll('leases:{t}'), { [lease()]: '100' });
      await store.runScript(settleReservation, settleKeys(), settleArgs(100, 30, { wallet: true }));
      assert.equal(await store.get('wallet:{t}'), '120');
      assert.deepEqual(await store.hashGetAll('leases:{t}'), {});
    });

    test('spend groups: each is checked in order, a refusal by the second writes nothing to the first or the wallet', async () => {
      const store = fresh();
      // KEYS: rate, budget, wallet, its leases, then (counter, cap) per group.
      const groupKeys = [...keys, 'org-spend:{t}', 'org-cap:{t}', 'user-spend:{t}', 'user-cap:{t}'];
      const groupArgs = (reserve: number) => args({ reserve, wallet: true, groupTtls: [60_000, 60_000] });
      await store.set('wallet:{t}', '10000');
      assert.deepEqual(await store.runScript(enforceRequest, groupKeys, groupArgs(100)), { kind: 'group_budget_unknown', group: 0 });
      await store.set('org-cap:{t}', '-1');
      await store.runScript(loadBudgetIfAbsent, ['org-spend:{t}'], [86_400_000, 0, 0]);
      assert.deepEqual(await store.runScript(enforceRequest, groupKeys, groupArgs(100)), { kind: 'group_budget_unknown', group: 1 });
      await store.set('user-cap:{t}', '250');
      await store.runScript(loadBudgetIfAbsent, ['user-spend:{t}'], [86_400_000, 0, 0]);
      assert.equal((await store.runScript(enforceRequest, groupKeys, groupArgs(100))).kind, 'admitted');
      assert.equal((await store.runScript(enforceRequest, groupKeys, groupArgs(100))).kind, 'admitted');
      assert.deepEqual(await store.runScript(enforceRequest, groupKeys, groupArgs(100)), {
        kind: 'group_budget_exceeded',
        group: 1,
        usedNano: 200,
        capNano: 250,
      });
      // Each group's counter lives as long as its ttl says (60 s here), on every store.
      for (const counter of ['org-spend:{t}', 'user-spend:{t}']) {
        const ttl = await store.pttl(counter);
        assert.ok(ttl > 0 && ttl <= 60_000, `${counter} expires in ${ttl} ms`);
      }
      // The organisation (no cap) counted both admitted requests and not the refused one.
      assert.deepEqual(await store.hashGetAll('org-spend:{t}'), { '0': '200', [reservedField]: '200', [lease()]: '200' });
      assert.equal(await store.get('wallet:{t}'), '9800');
      // Settling gives back to every group what was reserved and not spent.
      await store.runScript(
        settleReservation,
        [...settleKeys(), 'org-spend:{t}', 'user-spend:{t}'],
        settleArgs(100, 40, { wallet: true, groups: 2 }),
      );
      assert.deepEqual(await store.hashGetAll('org-spend:{t}'), { '0': '140', [reservedField]: '100', [lease()]: '100' });
      assert.deepEqual(await store.hashGetAll('user-spend:{t}'), { '0': '140', [reservedField]: '100', [lease()]: '100' });
      assert.equal(await store.get('wallet:{t}'), '9860');
    });

    test('rolling buckets: buckets older than the window stop counting and are dropped', async () => {
      const store = fresh();
      await emptyCounter(store, 100);
      await store.runScript(enforceRequest, keys, args({ reserve: 700, cap: 1_000, bucket: 100, minBucket: 71 }));
      assert.equal(
        (await store.runScript(enforceRequest, keys, args({ reserve: 400, cap: 1_000, bucket: 129, minBucket: 100 }))).kind,
        'budget_exceeded',
      );
      assert.equal(
        (await store.runScript(enforceRequest, keys, args({ reserve: 400, cap: 1_000, bucket: 130, minBucket: 101 }))).kind,
        'admitted',
      );
      // Both admitted requests are still in flight (never settled): 700 + 400 reserved.
      assert.deepEqual(await store.hashGetAll('budget:{t}'), {
        '130': '400',
        [reservedField]: '1100',
        [lease(100)]: '700',
        [lease(130)]: '400',
      });
    });

    test('a reservation nobody settled is given back when its lease ends; a settlement after that charges only its cost, once', async () => {
      const store = fresh();
      await emptyCounter(store);
      await store.set('wallet:{t}', '10000');
      await store.set('org-cap:{t}', '5000');
      await store.runScript(loadBudgetIfAbsent, ['org-spend:{t}'], [86_400_000, 0, 0]);
      const groupKeys = [...keys, 'org-spend:{t}', 'org-cap:{t}'];
      const enforceAt = (now: number, reserve: number, end: number) =>
        store.runScript(enforceRequest, groupKeys, args({ reserve, cap: 5_000, wallet: true, groupTtls: [60_000], now, leaseEnd: end }));
      // Two requests in flight: the first one's gateway dies, the second outlives its lease.
      assert.equal((await enforceAt(minute, 3_000, leaseEnd)).kind, 'admitted');
      assert.equal((await enforceAt(minute, 1_000, leaseEnd)).kind, 'admitted');
      // Until the lease ends both are held.
      assert.deepEqual(await enforceAt(leaseEnd, 2_000, leaseEnd + 15), { kind: 'budget_exceeded', usedNano: 4_000 });
      // The minute after, the next request gives both back before it reserves.
      const later = leaseEnd + 16;
      assert.equal((await enforceAt(leaseEnd + 1, 2_000, later)).kind, 'admitted');
      const onlyTheLast = { '0': '2000', [reservedField]: '2000', [lease(0, later)]: '2000' };
      assert.deepEqual(await store.hashGetAll('budget:{t}'), onlyTheLast);
      assert.deepEqual(await store.hashGetAll('org-spend:{t}'), onlyTheLast);
      assert.equal(await store.get('wallet:{t}'), '8000');
      assert.deepEqual(await store.hashGetAll('leases:{t}'), { [lease(0, later)]: '2000' });
      // The request that outlived its lease settles: its cost is charged, nothing is given back twice.
      const late = [...settleKeys(), 'org-spend:{t}'];
      const lateArgs = settleArgs(1_000, 600, { budget: true, wallet: true, groups: 1 });
      await store.runScript(settleReservation, late, lateArgs);
      await store.runScript(settleReservation, late, lateArgs);
      const withTheLate = { '0': '2600', [reservedField]: '2000', [lease(0, later)]: '2000' };
      assert.deepEqual(await store.hashGetAll('budget:{t}'), withTheLate);
      assert.deepEqual(await store.hashGetAll('org-spend:{t}'), withTheLate);
      assert.equal(await store.get('wallet:{t}'), '7400');
      // The last one settles within its lease: the wallet has paid exactly the two costs.
      await store.runScript(
        settleReservation,
        [...settleKeys(), 'org-spend:{t}'],
        settleArgs(2_000, 500, { budget: true, wallet: true, groups: 1, leaseEnd: later }),
      );
      assert.deepEqual(await store.hashGetAll('budget:{t}'), { '0': '1100', [reservedField]: '0' });
      assert.deepEqual(await store.hashGetAll('org-spend:{t}'), { '0': '1100', [reservedField]: '0' });
      assert.equal(await store.get('wallet:{t}'), String(10_000 - 600 - 500));
      assert.deepEqual(await store.hashGetAll('leases:{t}'), {});
    });

    test("a counter rebuilt without a reservation (another gateway rebuilt it) is charged that request's cost at settlement", async () => {
      const store = fresh();
      await emptyCounter(store);
      assert.equal((await store.runScript(enforceRequest, keys, args({ reserve: 1_000, cap: 5_000 }))).kind, 'admitted');
      await store.del('budget:{t}');
      await store.runScript(loadBudgetIfAbsent, ['budget:{t}'], [86_400_000, 0, 400]);
      await store.runScript(settleReservation, settleKeys(), settleArgs(1_000, 300));
      assert.deepEqual(await store.hashGetAll('budget:{t}'), { '0': '700' });
    });

    test('a counter and a mirror rebuilt by one gateway are settled right by every reservation, before and after the rebuild', async () => {
      const store = fresh();
      await emptyCounter(store);
      await store.set('wallet:{t}', '10000');
      const reserve = (holder: string) => store.runScript(enforceRequest, keys, args({ reserve: 1_000, cap: 5_000, wallet: true, holder }));
      // Two gateways reserve in the same minute, with the same lease end.
      for (const holder of ['g1', 'g2']) assert.equal((await reserve(holder)).kind, 'admitted');
      // The store loses both; g2 rebuilds them, on a new generation, with what it knows: the spend
      // before, and its own reservation under its lease's name.
      await store.del('budget:{t}', 'wallet:{t}', 'leases:{t}');
      const g2Lease = lease(0, leaseEnd, 'g2');
      await store.runScript(loadBudgetIfAbsent, ['budget:{t}'], [86_400_000, 0, 1_000, reservedField, 1_000, 'gen', 'r2', g2Lease, 1_000]);
      await store.set('wallet:{t}', String(10_000 - 1_000));
      await store.runScript(
        {
          name: 'test_leases',
          lua: "return redis.call('HSET', KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4])",
          memory: (r, k, a) => (r.hset(k[0]!, a[0]!, a[1]!), r.hset(k[0]!, a[2]!, a[3]!)),
          decode: () => undefined,
        },
        ['leases:{t}'],
        ['gen', 'r2', g2Lease, 1_000],
      );
      // g1 reserves again in the same minute, now on the rebuilt counter: a lease of its own there, not the lost one's name.
      const again = await reserve('g1');
      assert.deepEqual(again, { kind: 'admitted', generations: { budget: 'r2', wallet: 'r2', groups: [] } });
      // g1's first settlement finds no lease of its own (its reservation is not in the rebuilt
      // counter): its cost is charged. g2's and g1's second give back what they did not spend.
      const settle = (actual: number, holder: string, generation: string) =>
        store.runScript(settleReservation, settleKeys(), settleArgs(1_000, actual, { budget: true, wallet: true, holder, generation }));
      await settle(300, 'g1', '0');
      await settle(200, 'g2', '0');
      await settle(100, 'g1', 'r2');
      assert.deepEqual(await store.hashGetAll('budget:{t}'), { '0': '600', [reservedField]: '0', gen: 'r2' });
      assert.equal(await store.get('wallet:{t}'), String(10_000 - 600));
      assert.deepEqual(await store.hashGetAll('leases:{t}'), { gen: 'r2' });
    });

    test('the in-flight total: reserved at admission, given back at settlement, never counted as spend twice', async () => {
      const store = fresh();
      await emptyCounter(store);
      for (let i = 0; i < 3; i++)
        assert.equal((await store.runScript(enforceRequest, keys, args({ reserve: 1_000, cap: 3_000 }))).kind, 'admitted');
      assert.equal((await store.hashGetAll('budget:{t}'))[reservedField], '3000');
      // Spend counted is 3,000 (the day bucket), not 6,000: the total is skipped when summing.
      assert.equal((await store.runScript(enforceRequest, keys, args({ reserve: 1, cap: 3_000 }))).kind, 'budget_exceeded');
      const settle = (actual: number) => store.runScript(settleReservation, settleKeys(), settleArgs(1_000, actual));
      await settle(250);
      await settle(0);
      assert.deepEqual(await store.hashGetAll('budget:{t}'), { '0': '1250', [reservedField]: '1000', [lease()]: '1000' });
      const marker = settleKeys();
      await store.runScript(settleReservation, marker, settleArgs(1_000, 100));
      await store.runScript(settleReservation, marker, settleArgs(1_000, 100));
      assert.deepEqual(
        await store.hashGetAll('budget:{t}'),
        { '0': '350', [reservedField]: '0' },
        'a repeated settlement changes nothing twice',
      );
    });
  });
}

enforcementContract('memory', () => new MemoryStore('t:'));
enforcementContract('memory (sharded, as a cluster)', () => new MemoryStore('t:', Date.now, { sharded: true }));
if (process.env.REDIS_URL) {
  const url = process.env.REDIS_URL;
  const cluster = testRedisIsCluster();
  enforcementContract(cluster ? 'redis cluster' : 'redis', () => createRedisTestStore(url, { cluster }));
}
