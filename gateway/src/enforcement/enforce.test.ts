// enforce() over every kind of store: one script on a single store, one per shard on a cluster
// (the memory store playing one, and a real Redis Cluster when SVC_REDIS_CLUSTER is set), with
// the same answers and the same counters afterwards — including when a later shard refuses a
// request that earlier ones had admitted.
import { afterEach, describe, test } from 'vitest';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import {
  budgetWindow,
  leaseMarginMs,
  loadBudgetIfAbsent,
  publishSpendGroupCap,
  rateWindowKey,
  rateWindowMs,
  readBudgetUsage,
  readRateWindow,
  reservedField,
  spendGroupWindow,
  toNano,
} from '../../../core/budget/index.js';
import type { AuditJournal } from '../../../core/audit/journal.js';
import { ApiError } from '../../../core/errors/index.js';
import type { KeyRecord } from '../../../core/keys/index.js';
import { MemoryStore, type Store } from '../../../core/store/index.js';
import { createRedisTestStore, testRedisIsCluster } from '../../../core/store/testing.js';
import { enforcedBalanceNano, walletKey, type WalletLedger } from '../../../core/wallets/index.js';
import { waitFor } from '../../../test/support/wait-for.js';
import { enforce, usdText, type EnforcementDeps } from './enforce.js';
import { SpendRecovery } from './spend-recovery.js';

const now = new Date('2026-11-26T12:00:00Z');

describe('amounts in refusal messages', () => {
  test('exact to the nano-dollar while a count is exact, and never with invented digits past it', () => {
    assert.equal(usdText(12_000), '0.000012');
    assert.equal(usdText(2_500_000_000), '2.5');
    assert.equal(usdText(0), '0');
    // A billion-dollar budget less $0.0000036 spent: the count is past 2^53, so 15 digits.
    assert.equal(usdText(1e18 - 3_600), '999999999.999996');
    assert.equal(usdText(1_234_567_890_123_677_440), '1234567890.12368');
  });
});
const org = { scope: 'organisation' as const, id: 5 };
const user = { scope: 'user' as const, id: 3 };

/** A portal key with everything on: rate limit, own budget, organisation and user groups, the organisation paying. */
function portalKey(): KeyRecord {
  return {
    id: `key_${randomUUID().slice(0, 8)}`,
    rateLimitRpm: 5,
    budgetLimitUsd: 1,
    budgetPeriod: 'monthly',
    payerId: 'org:5',
    payerCreditUsd: 0,
    organisationId: org.id,
    ownerUserId: user.id,
  } as unknown as KeyRecord;
}

/** Counts the store's script calls, and can make the calls touching one entity fail. */
function observed(store: Store): { store: Store; scriptCalls: () => number; failEntity(entity: string | null): void } {
  let calls = 0;
  let failing: string | null = null;
  const wrapped = Object.create(store) as Store;
  wrapped.runScript = (script, keys, args) => {
    calls++;
    if (failing !== null && keys.some((key) => key.includes(`{${failing}}`))) return Promise.reject(new Error('connection lost (test)'));
    return store.runScript(script, keys, args);
  };
  return { store: wrapped, scriptCalls: () => calls, failEntity: (entity) => (failing = entity) };
}

function enforcementOn(name: string, open: () => Store): void {
  describe(`enforce on ${name}`, () => {
    const cleanups: (() => Promise<void>)[] = [];
    afterEach(async () => {
      for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    });

    /** A store with the key's counters, both groups (caps in USD) and the organisation's wallet loaded. */
    async function setUp(key: KeyRecord, caps: { org: number; user: number }, walletUsd: number) {
      const raw = open();
      const seen = observed(raw);
      // Rebuilds are not exercised here: every counter is loaded below, so these are never asked.
      const spend = new SpendRecovery({} as Knex, {} as AuditJournal, {} as WalletLedger, { retryMs: 20 });
      cleanups.push(async () => {
        await spend.stop();
        await raw.close();
      });
      const window = budgetWindow(key.id, 'monthly', now);
      await raw.runScript(loadBudgetIfAbsent, [window.counterKey], [window.ttlMs, 0, 0]);
      for (const group of [org, user]) {
        const groupWindow = spendGroupWindow(group, now);
        await raw.runScript(loadBudgetIfAbsent, [groupWindow.counterKey], [groupWindow.ttlMs, 0, 0]);
      }
      await publishSpendGroupCap(raw, org, toNano(caps.org));
      await publishSpendGroupCap(raw, user, toNano(caps.user));
      await raw.set(walletKey('org:5'), String(toNano(walletUsd)));
      const deps: EnforcementDeps = { store: seen.store, spend, clock: () => now.getTime() };
      return { deps, seen, raw, window };
    }

    /** Every counter the request touched: [key budget, org, user] as {spent, reserved}, the wallet, and the rate window's count. */
    async function counters(raw: Store, key: KeyRecord) {
      const hash = async (counterKey: string) => {
        const all = await raw.hashGetAll(counterKey);
        return { spent: Number(all['0'] ?? 0), reserved: Number(all[reservedField] ?? 0) };
      };
      return {
        key: await hash(budgetWindow(key.id, 'monthly', now).counterKey),
        org: await hash(spendGroupWindow(org, now).counterKey),
        user: await hash(spendGroupWindow(user, now).counterKey),
        wallet: Number(await raw.get(walletKey('org:5'))),
        rate: (await raw.runScript(readRateWindow, [rateWindowKey(key.id)], [rateWindowMs])).counted,
      };
    }

    test('admits, reserves everywhere, settles the actual cost everywhere, exactly once', async () => {
      const key = portalKey();
      const { deps, seen, raw } = await setUp(key, { org: 10, user: 10 }, 5);
      const reservation = await enforce(deps, key, 0.25, randomUUID());
      // One script on a single store; on a cluster one per shard: the key, the organisation (with its wallet), the user.
      assert.equal(seen.scriptCalls(), raw.sharded ? 3 : 1);
      const reserved = await counters(raw, key);
      assert.deepEqual(reserved.key, { spent: toNano(0.25), reserved: toNano(0.25) });
      assert.deepEqual(reserved.org, { spent: toNano(0.25), reserved: toNano(0.25) });
      assert.deepEqual(reserved.user, { spent: toNano(0.25), reserved: toNano(0.25) });
      assert.equal(reserved.wallet, toNano(4.75));
      assert.equal(reserved.rate, 1);
      await reservation.settle(0.1);
      await reservation.settle(0.1);
      const settled = await counters(raw, key);
      for (const counter of [settled.key, settled.org, settled.user]) assert.deepEqual(counter, { spent: toNano(0.1), reserved: 0 });
      assert.equal(settled.wallet, toNano(4.9));
    });

    test('a gateway that dies with a request in flight: its reservation is given back everywhere once its lease ends', async () => {
      const key = portalKey();
      const { deps, raw } = await setUp(key, { org: 10, user: 10 }, 5);
      // Reserved and never settled: its gateway was killed. The request could have lived a minute.
      await enforce(deps, key, 0.25, randomUUID(), () => 60_000);
      let at = now.getTime();
      const later: EnforcementDeps = { ...deps, clock: () => at };
      // Up to the lease's end (its life and the margin) the reservation is held.
      at = now.getTime() + 60_000 + leaseMarginMs;
      await (await enforce(later, key, 0.01, randomUUID(), () => 60_000)).settle(0.01);
      const held = await counters(raw, key);
      for (const counter of [held.key, held.org, held.user]) assert.deepEqual(counter, { spent: toNano(0.26), reserved: toNano(0.25) });
      assert.equal(held.wallet, toNano(4.74));
      // The minute after, readers already leave it out; the next request gives it back on every counter and on the wallet.
      at += 60_000;
      const shown = await readBudgetUsage(raw, key, new Date(at));
      assert.deepEqual([shown.usedUsd, shown.reservedUsd], [0.01, 0]);
      assert.equal(await enforcedBalanceNano(raw, 'org:5', new Date(at)), toNano(4.99));
      assert.equal(await enforcedBalanceNano(raw, 'org:5', new Date(at - 60_000)), toNano(4.74));
      const next = await enforce(later, key, 0.02, randomUUID(), () => 60_000);
      const given = await counters(raw, key);
      for (const counter of [given.key, given.org, given.user]) assert.deepEqual(counter, { spent: toNano(0.03), reserved: toNano(0.02) });
      assert.equal(given.wallet, toNano(4.97));
      await next.settle(0.005);
      const settled = await counters(raw, key);
      for (const counter of [settled.key, settled.org, settled.user]) assert.deepEqual(counter, { spent: toNano(0.015), reserved: 0 });
      assert.equal(settled.wallet, toNano(5 - 0.015));
    });

    test('a refusal by the payer leaves no trace on the shards that admitted the request', async () => {
      const key = portalKey();
      const { deps, raw } = await setUp(key, { org: 10, user: 10 }, 0.1);
      const before = await counters(raw, key);
      await assert.rejects(
        enforce(deps, key, 0.25, randomUUID()),
        (error: unknown) => error instanceof ApiError && error.code === 'billing_limit_reached',
      );
      assert.deepEqual(await counters(raw, key), before, 'budget, groups and rate window as before');
    });

    test("a refusal by the user's group names the group; nothing else is kept", async () => {
      const key = portalKey();
      const { deps, raw } = await setUp(key, { org: 10, user: 0.2 }, 5);
      const before = await counters(raw, key);
      await assert.rejects(enforce(deps, key, 0.25, randomUUID()), (error: unknown) => {
        assert.ok(error instanceof ApiError && error.code === 'budget_exceeded');
        assert.equal((error.details as { scope?: string }).scope, 'user');
        return true;
      });
      assert.deepEqual(await counters(raw, key), before);
    });

    test("a refusal by a tiny key budget names it in decimals, never with an exponent (it read 'a budget of 1e-7 USD')", async () => {
      const key = { ...portalKey(), budgetLimitUsd: 0.0000001 };
      const { deps } = await setUp(key, { org: 10, user: 10 }, 5);
      await assert.rejects(enforce(deps, key, 0.25, randomUUID()), (error: unknown) => {
        assert.ok(error instanceof ApiError && error.code === 'budget_exceeded');
        assert.match(error.humanMessage, /monthly budget of 0\.0000001 USD has 0\.0000001 USD left/);
        assert.doesNotMatch(error.humanMessage, /\de-?\d/);
        return true;
      });
    });

    test('the rate limit holds across shards, and refused requests do not use it up', async () => {
      const key = portalKey();
      const { deps, raw } = await setUp(key, { org: 10, user: 10 }, 0.3);
      // Two admitted (0.1 each), then the wallet runs dry: those refusals must not take rate places.
      for (let i = 0; i < 2; i++) await (await enforce(deps, key, 0.1, randomUUID())).settle(0.1);
      for (let i = 0; i < 4; i++) await assert.rejects(enforce(deps, key, 0.2, randomUUID()), /funds|payer/);
      assert.equal((await counters(raw, key)).rate, 2);
      await raw.set(walletKey('org:5'), String(toNano(5)));
      for (let i = 0; i < 3; i++) await enforce(deps, key, 0.01, randomUUID());
      await assert.rejects(
        enforce(deps, key, 0.01, randomUUID()),
        (error: unknown) => error instanceof ApiError && error.code === 'rate_limit_exceeded',
      );
    });

    test('a settlement one shard refuses is retried alone: shards that took it are not settled twice, even once their markers expired', async () => {
      const key = portalKey();
      const { deps, seen, raw } = await setUp(key, { org: 10, user: 10 }, 5);
      const requestId = randomUUID();
      const reservation = await enforce(deps, key, 0.25, requestId);
      seen.failEntity('user:3');
      await assert.rejects(reservation.settle(0.1), /connection lost/);
      // The markers of the parts that were settled expire while the user's shard stays down.
      await raw.del(`settled:{${key.id}}:${requestId}`, `settled:{org:5}:${requestId}`, `settled:${requestId}`);
      seen.failEntity(null);
      deps.spend.storeAnswered();
      await waitFor('the owed settlement to be taken', async () => (await counters(raw, key)).user.reserved === 0);
      const after = await counters(raw, key);
      for (const counter of [after.key, after.org, after.user]) assert.deepEqual(counter, { spent: toNano(0.1), reserved: 0 });
      assert.equal(after.wallet, toNano(4.9));
    });

    test('a withdrawal the store refuses is retried until taken; the refusal is answered meanwhile', async () => {
      const key = portalKey();
      const { deps, seen, raw } = await setUp(key, { org: 10, user: 0.2 }, 5);
      const before = await counters(raw, key);
      // The user's group refuses; on a cluster the key and organisation shards admitted and must
      // be withdrawn, and the first withdrawal fails.
      let failures = raw.sharded ? 1 : 0;
      const flaky = Object.create(seen.store) as Store;
      flaky.runScript = (script, keys, args) =>
        script.name === 'settle_reservation' && failures-- > 0
          ? Promise.reject(new Error('connection lost (test)'))
          : seen.store.runScript(script, keys, args);
      await assert.rejects(
        enforce({ ...deps, store: flaky }, key, 0.25, randomUUID()),
        (error: unknown) => error instanceof ApiError && error.code === 'budget_exceeded',
      );
      await waitFor('the owed withdrawal to be taken', async () => {
        deps.spend.storeAnswered();
        return JSON.stringify(await counters(raw, key)) === JSON.stringify(before);
      });
    });

    test('a shard that fails mid-reservation: the error reaches the caller, the other shards are given back', async () => {
      const key = portalKey();
      const { deps, seen, raw } = await setUp(key, { org: 10, user: 10 }, 5);
      const before = await counters(raw, key);
      seen.failEntity('user:3');
      await assert.rejects(enforce(deps, key, 0.25, randomUUID()), /connection lost/);
      seen.failEntity(null);
      assert.deepEqual(await counters(raw, key), before);
    });
  });
}

enforcementOn('memory', () => new MemoryStore('t:'));
enforcementOn('memory (sharded, as a cluster)', () => new MemoryStore('t:', Date.now, { sharded: true }));
if (process.env.REDIS_URL) {
  const url = process.env.REDIS_URL;
  const cluster = testRedisIsCluster();
  enforcementOn(cluster ? 'redis cluster' : 'redis', () => createRedisTestStore(url, { cluster }));
}
