// A key's budget settings change (a new period, a limit set on a key that had none) while its
// requests are in flight: the new counter is rebuilt from the audit log, which does not hold them
// yet. They must count on it all the same — carried in by their own gateway's rebuild, or charged
// their actual cost when they settle (key-flights.ts). An outside probe flipping a key's period
// under concurrent slow requests spent 2.46× its daily budget before.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { randomUUID } from 'node:crypto';
import type { AuditJournal } from '../../../core/audit/journal.js';
import { budgetWindow, reservedField } from '../../../core/budget/index.js';
import type { Database } from '../../../core/db/index.js';
import { createTestDatabase } from '../../../core/db/testing.js';
import { ApiError } from '../../../core/errors/index.js';
import type { BudgetPeriod, KeyRecord } from '../../../core/keys/index.js';
import { MemoryStore, type Store } from '../../../core/store/index.js';
import { createRedisTestStore, testRedisIsCluster } from '../../../core/store/testing.js';
import { WalletLedger } from '../../../core/wallets/index.js';
import { waitFor } from '../../../test/support/wait-for.js';
import { enforce, type EnforcementDeps, type Reservation } from './enforce.js';
import { SpendRecovery } from './spend-recovery.js';

let database: Database;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database?.close();
});

const t0 = Date.parse('2026-11-26T12:00:00Z');
let seq = 0;

/** One store shared by gateways made with `gateway()`, each with its own journal; a key with the given budget settings. */
function world(open: (prefix: string) => Store) {
  const store = open(`change${++seq}x${process.pid}:`);
  const keyId = `key_change${randomUUID().slice(0, 8)}`;
  let clock = t0;
  const key = (settings: { limit: number | null; period: BudgetPeriod | null; since?: number }): KeyRecord =>
    ({
      id: keyId,
      secretHash: `hash-${keyId}`,
      rateLimitRpm: null,
      budgetLimitUsd: settings.limit,
      budgetPeriod: settings.period,
      budgetPeriodSince: settings.since === undefined ? null : new Date(settings.since).toISOString(),
      payerId: null,
      organisationId: null,
      ownerUserId: null,
    }) as unknown as KeyRecord;
  const gateways: SpendRecovery[] = [];
  const gateway = () => {
    const unconfirmed: { requestId: string; keyId: string; payerId: null; timestamp: string; costUsd: number }[] = [];
    const journal = { unconfirmed: () => unconfirmed } as unknown as AuditJournal;
    // PostgreSQL as this gateway reaches it: `postgres.down` makes its reads fail.
    const postgres = { down: false };
    const knex = new Proxy(database.knex, {
      apply: (target, self, args: unknown[]) => {
        if (postgres.down) throw new Error('connection refused (test)');
        return Reflect.apply(target, self, args) as unknown;
      },
    });
    const spend = new SpendRecovery(knex, journal, new WalletLedger(database.knex, store), { retryMs: 60_000 });
    gateways.push(spend);
    const deps: EnforcementDeps = { store, spend, clock: () => clock };
    return {
      spend,
      postgres,
      /** A request of `record` reserving `worstUsd` (up to a minute long), admitted and in flight. */
      async admit(record: KeyRecord, worstUsd: number) {
        const requestId = randomUUID();
        const reservation = await enforce(deps, record, worstUsd, requestId, () => 60_000);
        return { requestId, record, reservation, at: clock };
      },
      /** A token count of `record` (messages/count_tokens): rate limit only, its key copied without a budget. */
      count: (record: KeyRecord) => enforce(deps, { ...record, budgetLimitUsd: null, payerId: null }, 0, randomUUID()),
      /** Settles it at `actualUsd`, its audit record appended in the same tick (as accounting.ts does). */
      async settle(flight: { requestId: string; record: KeyRecord; reservation: Reservation; at: number }, actualUsd: number) {
        const settled = flight.reservation.settle(actualUsd);
        unconfirmed.push({
          requestId: flight.requestId,
          keyId: flight.record.id,
          payerId: null,
          timestamp: new Date(flight.at).toISOString(),
          costUsd: actualUsd,
        });
        await settled;
      },
    };
  };
  return {
    store,
    key,
    /** The usual change: a $1 daily budget made monthly a second in. */
    daily: key({ limit: 1, period: 'daily' }),
    monthly: key({ limit: 1, period: 'monthly', since: t0 + 1_000 }),
    gateway,
    at: (ms: number) => (clock = ms),
    /** A counter's spend (all buckets) and reservations in flight, in USD. */
    async counted(record: KeyRecord) {
      const window = budgetWindow(record.id, record.budgetPeriod ?? 'monthly', new Date(clock), record.budgetPeriodSince);
      const hash = await store.hashGetAll(window.counterKey);
      let spent = 0;
      for (const [field, value] of Object.entries(hash)) if (/^\d+$/.test(field)) spent += Number(value);
      return { spent: spent / 1e9, reserved: Number(hash[reservedField] ?? 0) / 1e9 };
    },
    close: async () => {
      for (const spend of gateways) await spend.stop(0);
      await store.close();
    },
  };
}

/** Runs a test in a world of its own, closed after. */
async function inWorld(open: (prefix: string) => Store, body: (w: ReturnType<typeof world>) => Promise<void>): Promise<void> {
  const w = world(open);
  try {
    await body(w);
  } finally {
    await w.close();
  }
}

const stores: [string, (prefix: string) => Store][] = [
  ['memory', (prefix) => new MemoryStore(prefix)],
  ['memory (sharded, as a cluster)', (prefix) => new MemoryStore(prefix, Date.now, { sharded: true })],
];
if (process.env.REDIS_URL) {
  const url = process.env.REDIS_URL;
  const cluster = testRedisIsCluster();
  stores.push([cluster ? 'redis cluster' : 'redis', () => createRedisTestStore(url, { cluster })]);
}

describe.each(stores)('a budget settings change with requests in flight, on %s', (_, open) => {
  test('a new period: the new counter counts the requests in flight at once, then their actual cost', () =>
    inWorld(open, async (w) => {
      const a = w.gateway();
      const { daily } = w;
      const r1 = await a.admit(daily, 0.25);
      const { monthly } = w;
      w.at(t0 + 2_000);
      const r2 = await a.admit(monthly, 0.25);
      expect(await w.counted(monthly)).toEqual({ spent: 0.5, reserved: 0.5 });
      await a.settle(r1, 0.1);
      expect(await w.counted(monthly)).toEqual({ spent: 0.35, reserved: 0.25 });
      await a.settle(r2, 0.05);
      expect(await w.counted(monthly)).toEqual({ spent: 0.15, reserved: 0 });
      // The old counter was settled as ever.
      expect(await w.counted(daily)).toEqual({ spent: 0.1, reserved: 0 });
      expect(a.spend.flights.keysInFlight).toBe(0);
      expect(a.spend.owedCount).toBe(0);
    }));

  test('a new period cannot be used to overspend: what is in flight still counts against the limit', () =>
    inWorld(open, async (w) => {
      const a = w.gateway();
      const r1 = await a.admit(w.key({ limit: 0.5, period: 'daily' }), 0.4);
      const monthly = w.key({ limit: 0.5, period: 'monthly', since: t0 + 1_000 });
      await expect(a.admit(monthly, 0.2)).rejects.toSatisfy((error) => error instanceof ApiError && error.code === 'budget_exceeded');
      await a.settle(r1, 0.4);
      await expect(a.admit(monthly, 0.2)).rejects.toSatisfy((error) => error instanceof ApiError && error.code === 'budget_exceeded');
      const r3 = await a.admit(monthly, 0.1);
      await a.settle(r3, 0.1);
      expect(await w.counted(monthly)).toEqual({ spent: 0.5, reserved: 0 });
    }));

  test("a token count between (its key's copy without a budget) does not pass for the key's settings", () =>
    inWorld(open, async (w) => {
      const a = w.gateway();
      const r1 = await a.admit(w.daily, 0.25);
      const { monthly } = w;
      const r2 = await a.admit(monthly, 0.25);
      await a.count(monthly);
      await a.settle(r1, 0.1);
      expect(await w.counted(monthly)).toEqual({ spent: 0.35, reserved: 0.25 });
      await a.settle(r2, 0.05);
    }));

  test('a limit set on a key that had none: its requests in flight (which reserved nothing) count on the new counter', () =>
    inWorld(open, async (w) => {
      const a = w.gateway();
      const unlimited = w.key({ limit: null, period: null });
      const r1 = await a.admit(unlimited, 0.3);
      const limited = w.key({ limit: 1, period: 'daily', since: t0 + 1_000 });
      const r2 = await a.admit(limited, 0.2);
      expect(await w.counted(limited)).toEqual({ spent: 0.5, reserved: 0.5 });
      await a.settle(r1, 0.12);
      await a.settle(r2, 0.01);
      expect(await w.counted(limited)).toEqual({ spent: 0.13, reserved: 0 });
      expect(a.spend.flights.keysInFlight).toBe(0);
    }));

  test("another gateway rebuilt the new counter without this one's request: carried in when a request of the key brings the new settings", () =>
    inWorld(open, async (w) => {
      const a = w.gateway();
      const b = w.gateway();
      const r1 = await a.admit(w.daily, 0.25);
      const { monthly } = w;
      const r2 = await b.admit(monthly, 0.25);
      expect(await w.counted(monthly)).toEqual({ spent: 0.25, reserved: 0.25 });
      // A request of the key reaches A with the new settings: A adds r1 before reserving.
      const r3 = await a.admit(monthly, 0.25);
      expect(await w.counted(monthly)).toEqual({ spent: 0.75, reserved: 0.75 });
      await a.settle(r1, 0.1);
      expect(await w.counted(monthly)).toEqual({ spent: 0.6, reserved: 0.5 });
      await b.settle(r2, 0.02);
      await a.settle(r3, 0.03);
      expect(await w.counted(monthly)).toEqual({ spent: 0.15, reserved: 0 });
    }));

  test("a rebuild that loses to another gateway's adds its requests in flight to the counter that won", () =>
    inWorld(open, async (w) => {
      const a = w.gateway();
      const b = w.gateway();
      const r1 = await a.admit(w.daily, 0.25);
      const { monthly } = w;
      const r2 = await b.admit(monthly, 0.25);
      const now = new Date(t0);
      await a.spend.rebuildBudget(w.store, monthly, budgetWindow(monthly.id, 'monthly', now, monthly.budgetPeriodSince), now);
      expect(await w.counted(monthly)).toEqual({ spent: 0.5, reserved: 0.5 });
      await a.settle(r1, 0.1);
      await b.settle(r2, 0.02);
      expect(await w.counted(monthly)).toEqual({ spent: 0.12, reserved: 0 });
    }));

  test("another gateway's settlement where this one carried nothing in: charged its actual cost", () =>
    inWorld(open, async (w) => {
      const a = w.gateway();
      const b = w.gateway();
      const r1 = await a.admit(w.daily, 0.25);
      const { monthly } = w;
      // The store refuses A's addition: r1 is not in the counter B rebuilt.
      const refusing = Object.create(w.store) as Store;
      refusing.runScript = (script, keys, args) =>
        script.name === 'budget_add_leases_if_present'
          ? Promise.reject(new Error('connection lost (test)'))
          : w.store.runScript(script, keys, args);
      const r2 = await b.admit(monthly, 0.25);
      await a.spend.carryFlights(refusing, monthly, new Date(t0));
      expect(await w.counted(monthly)).toEqual({ spent: 0.25, reserved: 0.25 });
      a.spend.flights.see(monthly);
      await a.settle(r1, 0.1);
      expect(await w.counted(monthly)).toEqual({ spent: 0.35, reserved: 0.25 });
      await b.settle(r2, 0.02);
      expect(await w.counted(monthly)).toEqual({ spent: 0.12, reserved: 0 });
    }));

  test('a key rotated while its requests are in flight: announcements of its new secret are heard, and nothing stays indexed', () =>
    inWorld(open, async (w) => {
      const a = w.gateway();
      const b = w.gateway();
      const r1 = await a.admit(w.daily, 0.25);
      // Rotated (a new secret hash) and given a monthly period; B serves the key under its new secret.
      const rotated = { ...w.monthly, secretHash: `rotated-${w.monthly.secretHash}` };
      a.spend.flights.see(rotated);
      const r2 = await b.admit(rotated, 0.25);
      const next = { ...rotated, budgetPeriodSince: new Date(t0 + 5_000).toISOString() };
      let reads = 0;
      await a.spend.keyChanged(
        w.store,
        rotated.secretHash,
        async () => (reads++, next),
        () => t0 + 6_000,
      );
      expect(reads).toBe(1);
      await a.settle(r1, 0.1);
      await b.settle(r2, 0.02);
      expect(a.spend.flights.keysInFlight).toBe(0);
      expect(a.spend.flights.secretsIndexed).toBe(0);
    }));

  test('a carry asked while another is under way returns only once that one is done (a PATCH answer showed 0 reserved)', () =>
    inWorld(open, async (w) => {
      const a = w.gateway();
      const b = w.gateway();
      const r1 = await a.admit(w.daily, 0.25);
      const { monthly } = w;
      const r2 = await b.admit(monthly, 0.25);
      let opened!: () => void;
      const door = new Promise<void>((resolve) => (opened = resolve));
      let atDoor = false;
      const held = Object.create(w.store) as Store;
      held.runScript = async (script, keys, args) => {
        if (script.name === 'budget_add_leases_if_present') {
          atDoor = true;
          await door;
        }
        return w.store.runScript(script, keys, args);
      };
      const announced = a.spend.keyChanged(
        held,
        w.daily.secretHash,
        async () => monthly,
        () => t0,
      );
      await waitFor('the announcement carry at the store', () => atDoor);
      let asked = false;
      const again = a.spend.carryFlights(held, monthly, new Date(t0)).then(() => (asked = true));
      await Promise.resolve();
      expect(asked).toBe(false);
      opened();
      await Promise.all([announced, again]);
      expect(await w.counted(monthly)).toEqual({ spent: 0.5, reserved: 0.5 });
      await a.settle(r1, 0.1);
      await b.settle(r2, 0.02);
      expect(await w.counted(monthly)).toEqual({ spent: 0.12, reserved: 0 });
    }));

  test('a change announced while no request of the key reaches this gateway: its request in flight still counts on the new counter', () =>
    inWorld(open, async (w) => {
      const a = w.gateway();
      const b = w.gateway();
      const { daily } = w;
      const r1 = await a.admit(daily, 0.25);
      const { monthly } = w;
      const r2 = await b.admit(monthly, 0.25);
      expect(await w.counted(monthly)).toEqual({ spent: 0.25, reserved: 0.25 });
      // The key change channel announces the key's secret hash; A reads its settings again and carries r1 in.
      let reads = 0;
      const read = async () => (reads++, monthly);
      await a.spend.keyChanged(w.store, 'hash-of-a-key-with-nothing-in-flight', read, () => t0 + 2_000);
      expect(reads).toBe(0);
      await a.spend.keyChanged(w.store, daily.secretHash, read, () => t0 + 2_000);
      expect(reads).toBe(1);
      expect(await w.counted(monthly)).toEqual({ spent: 0.5, reserved: 0.5 });
      await a.settle(r1, 0.1);
      await b.settle(r2, 0.02);
      expect(await w.counted(monthly)).toEqual({ spent: 0.12, reserved: 0 });
    }));

  test('a rebuild that fails (PostgreSQL unreachable) leaves its requests in flight to the next one', () =>
    inWorld(open, async (w) => {
      const a = w.gateway();
      const r1 = await a.admit(w.daily, 0.25);
      const { monthly } = w;
      a.postgres.down = true;
      await expect(a.admit(monthly, 0.25)).rejects.toThrow('connection refused');
      a.postgres.down = false;
      const r2 = await a.admit(monthly, 0.25);
      expect(await w.counted(monthly)).toEqual({ spent: 0.5, reserved: 0.5 });
      await a.settle(r1, 0.1);
      await a.settle(r2, 0.05);
      expect(await w.counted(monthly)).toEqual({ spent: 0.15, reserved: 0 });
    }));

  test('four period changes under requests in flight: every request counted once on the newest counter', () =>
    inWorld(open, async (w) => {
      const a = w.gateway();
      const periods: BudgetPeriod[] = ['daily', 'monthly', 'rolling', 'daily', 'monthly'];
      const inFlight: Awaited<ReturnType<typeof a.admit>>[] = [];
      let record = w.key({ limit: 10, period: periods[0]! });
      for (let change = 0; change < periods.length; change++) {
        if (change > 0) record = w.key({ limit: 10, period: periods[change]!, since: t0 + change * 1_000 });
        w.at(t0 + change * 1_000 + 500);
        inFlight.push(await a.admit(record, 1), await a.admit(record, 1));
      }
      expect(await w.counted(record)).toEqual({ spent: 10, reserved: 10 });
      await expect(a.admit(record, 0.5)).rejects.toSatisfy((error) => error instanceof ApiError && error.code === 'budget_exceeded');
      for (const flight of inFlight) await a.settle(flight, 0.5);
      expect(await w.counted(record)).toEqual({ spent: 5, reserved: 0 });
      expect(a.spend.owedCount).toBe(0);
      expect(a.spend.flights.keysInFlight).toBe(0);
    }));

  test("a daily counter's next day is not a settings change: yesterday's request is not counted today", () =>
    inWorld(open, async (w) => {
      const a = w.gateway();
      const { daily } = w;
      w.at(Date.parse('2026-11-26T23:59:30Z'));
      const late = await a.admit(daily, 0.25);
      w.at(Date.parse('2026-11-27T00:00:30Z'));
      const next = await a.admit(daily, 0.25);
      await a.settle(late, 0.1);
      await a.settle(next, 0.05);
      expect(await w.counted(daily)).toEqual({ spent: 0.05, reserved: 0 });
    }));

  test('the new counter lost by the store and rebuilt again: a request carried into it is still counted once', () =>
    inWorld(open, async (w) => {
      const a = w.gateway();
      const r1 = await a.admit(w.daily, 0.25);
      const { monthly } = w;
      const r2 = await a.admit(monthly, 0.25);
      await a.settle(r2, 0.05);
      const window = budgetWindow(monthly.id, 'monthly', new Date(t0), monthly.budgetPeriodSince);
      await w.store.del(window.counterKey);
      const r3 = await a.admit(monthly, 0.25);
      expect(await w.counted(monthly)).toEqual({ spent: 0.55, reserved: 0.5 });
      await a.settle(r1, 0.1);
      await a.settle(r3, 0.01);
      expect(await w.counted(monthly)).toEqual({ spent: 0.16, reserved: 0 });
    }));
});
