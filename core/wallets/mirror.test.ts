// The wallet mirror follows the ledger by two paths — a load of a missing mirror, and each
// credit added once from the outbox — and an entry must be counted by exactly one of them. An
// outside probe drove a ledger below zero by racing top-ups with a wallet's first requests (a
// credit counted twice), lost a credit the same way, and was told "503, retry" for a credit
// already made (a retry credited twice). Each interleaving is played here step by step.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createTestDatabase } from '../db/testing.js';
import type { Database } from '../db/index.js';
import { openSharedTestStores } from '../store/testing.js';
import type { Store, StoreScript } from '../store/types.js';
import { waitFor } from '../../test/support/wait-for.js';
import { WalletLedger } from './ledger.js';
import { applyMirrorOutbox, enforcedBalanceNano, loadMirrorOnce, walletKey, walletLeasesKey } from './mirror.js';

let database: Database;
let store: Store;
let payerSeq = 0;

beforeAll(async () => {
  database = await createTestDatabase();
  store = openSharedTestStores().main;
});
afterAll(async () => {
  await store?.close();
  await database?.close();
});

const usd = 1_000_000_000;
const newPayer = () => `project:mirror-${process.pid}-${++payerSeq}-${Date.now()}`;
const mirror = async (payer: string) => Number(await store.get(walletKey(payer)));
const sweep = () => applyMirrorOutbox(database.knex, store, { olderThanMs: 0, now: new Date(Date.now() + 1_000) });

/** A script held at the store's door until opened; `reached` once something waits there. */
function gate(): { opened: Promise<void>; open: () => void; reached: boolean } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open, reached: false };
}

/** The store, with the scripts named in `gates` held until their gate is opened. */
function gatedStore(gates: Map<string, ReturnType<typeof gate>>): Store {
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property !== 'runScript') return Reflect.get(target, property, receiver) as unknown;
      return async <R>(script: StoreScript<R>, keys: readonly string[], args: readonly (string | number)[]) => {
        const held = gates.get(script.name);
        if (held) {
          held.reached = true;
          await held.opened;
        }
        return target.runScript(script, keys, args);
      };
    },
  });
}

test('a credit committed before a load reads the ledger is counted once, by the load', async () => {
  const payer = newPayer();
  const ledger = new WalletLedger(database.knex, store);
  await ledger.credit(payer, 1, 'first', 'test');
  await store.del(walletKey(payer));
  // The second credit is committed, but its application has not run when the load reads.
  const apply = gate();
  const crediting = new WalletLedger(database.knex, gatedStore(new Map([['wallet_apply_entry_once', apply]]))).credit(
    payer,
    2,
    'racing the load',
    'test',
  );
  await waitFor('the credit to be committed', () => apply.reached);
  await loadMirrorOnce(database.knex, store, payer, 0);
  expect(await mirror(payer)).toBe(3 * usd);
  apply.open(); // the credit's own application, late
  expect(await crediting).toMatchObject({ balanceUsd: 3 });
  await sweep();
  expect(await mirror(payer)).toBe(3 * usd);
});

test('a credit committed after a load read the ledger, applied before the load stored it, is added once the mirror is there', async () => {
  const payer = newPayer();
  const ledger = new WalletLedger(database.knex, store);
  await ledger.credit(payer, 1, 'first', 'test');
  await store.del(walletKey(payer));
  const load = gate();
  const loading = loadMirrorOnce(database.knex, gatedStore(new Map([['wallet_load_if_absent', load]])), payer, 0);
  await waitFor('the load to have read the ledger ($1)', () => load.reached);
  await ledger.credit(payer, 2, 'racing the load', 'test'); // no mirror yet: kept in the outbox
  expect(await database.knex('billing_mirror_outbox').where({ payer_id: payer }).first()).toBeDefined();
  load.open();
  await loading;
  expect(await mirror(payer)).toBe(1 * usd);
  await sweep();
  expect(await mirror(payer)).toBe(3 * usd);
  await sweep();
  expect(await mirror(payer)).toBe(3 * usd);
});

test('a credit whose store write fails is made all the same, once, and reaches the mirror by the sweep', async () => {
  const payer = newPayer();
  const ledger = new WalletLedger(database.knex, store);
  await ledger.credit(payer, 1, 'first', 'test');
  await loadMirrorOnce(database.knex, store, payer, 0);
  const failing = new Proxy(store, {
    get(target, property, receiver) {
      if (property === 'runScript') return () => Promise.reject(new Error('Connection is closed.'));
      return Reflect.get(target, property, receiver) as unknown;
    },
  });
  const answer = await new WalletLedger(database.knex, failing).credit(payer, 2, 'during an outage', 'test');
  expect(answer).toMatchObject({ balanceUsd: 3 });
  expect(await database.knex('billing_mirror_outbox').where({ payer_id: payer }).first()).toBeDefined();
  expect(await mirror(payer)).toBe(1 * usd);
  await sweep();
  expect(await mirror(payer)).toBe(3 * usd);
  await sweep();
  expect(await mirror(payer)).toBe(3 * usd);
  expect(await ledger.balanceNano(payer)).toBe(3 * usd);
});

test('a load leaves the mirror the leases of the reservations it left out, and no lease from before', async () => {
  const payer = newPayer();
  await new WalletLedger(database.knex, store).credit(payer, 5, 'first', 'test');
  // A lease left by reservations the store forgot the balance of (the mirror was dropped).
  await store.del(walletKey(payer));
  await store.runScript(
    {
      name: 'test_leave_lease',
      lua: "return redis.call('HSET', KEYS[1], 'lease:100:0:g0:0', '700')",
      memory: (redis, keys) => redis.hset(keys[0]!, 'lease:100:0:g0:0', '700'),
      decode: () => undefined,
    },
    [walletLeasesKey(payer)],
    [],
  );
  // The loading gateway has 250 nano-USD reserved in flight, under a lease ending at minute 200.
  await loadMirrorOnce(database.knex, store, payer, 250, new Map([['lease:200:0:g1:0', 250]]));
  expect(await mirror(payer)).toBe(5 * usd - 250);
  // On a new generation: a reservation made on the mirror from before cannot find a lease here.
  const leases = await store.hashGetAll(walletLeasesKey(payer));
  expect(leases).toEqual({ 'lease:200:0:g1:0': '250', gen: expect.stringMatching(/^[0-9a-f]{8}$/) });
  // The balance as enforcement sees it: a lease ended (minute 201 on) is not money spent.
  expect(await enforcedBalanceNano(store, payer, new Date(200 * 60_000))).toBe(5 * usd - 250);
  expect(await enforcedBalanceNano(store, payer, new Date(201 * 60_000))).toBe(5 * usd);
  expect(await enforcedBalanceNano(store, newPayer(), new Date())).toBeNull();
});
