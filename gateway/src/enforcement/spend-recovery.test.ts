// A settlement the store refused is owed; its request's audit record is written all the same. If
// the store then loses the key's counter and the payer's mirror, a rebuild reads that cost from
// the audit log (here the journal). Whatever the order of rebuilds and retries, the request's
// cost must be counted once: by the rebuild (the owed settlement then leaves the counter alone)
// or by the settlement (when another gateway's rebuild, not knowing the record, came first).
// Review and outside probes found each interleaving below counting it twice or not at all.
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { AuditJournal } from '../../../core/audit/journal.js';
import { budgetWindow, reservedField, toNano } from '../../../core/budget/index.js';
import type { Database } from '../../../core/db/index.js';
import { createTestDatabase } from '../../../core/db/testing.js';
import type { KeyRecord } from '../../../core/keys/index.js';
import { MemoryStore, type Store } from '../../../core/store/index.js';
import { WalletLedger, walletKey, walletLeasesKey } from '../../../core/wallets/index.js';
import { waitFor } from '../../../test/support/wait-for.js';
import { enforce, type EnforcementDeps } from './enforce.js';
import { SpendRecovery } from './spend-recovery.js';

let database: Database;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database?.close();
});

let seq = 0;

/**
 * One store (settlements can be refused, or held at the door) shared by gateways made with
 * `gateway()`, each with its own journal; a key with a $1 budget whose payer holds $5.
 */
async function world() {
  const raw = new MemoryStore(`owed${++seq}:`);
  const door = { refuse: false, refused: 0, held: undefined as Promise<void> | undefined };
  const store = Object.create(raw) as Store;
  store.runScript = async (script, keys, args) => {
    if (script.name === 'settle_reservation') {
      if (door.held) await door.held;
      if (door.refuse) {
        door.refused++;
        throw new Error('connection lost (test)');
      }
    }
    return raw.runScript(script, keys, args);
  };
  const payer = `project:owed-${process.pid}-${seq}-${Date.now()}`;
  const ledger = new WalletLedger(database.knex, store);
  await ledger.credit(payer, 5, 'test funds', 'test');
  const key = {
    id: `key_owed${seq}x${Date.now()}`,
    rateLimitRpm: null,
    budgetLimitUsd: 1,
    budgetPeriod: 'monthly',
    payerId: payer,
    payerCreditUsd: 0,
    organisationId: null,
    ownerUserId: null,
  } as unknown as KeyRecord;
  const now = Date.now();
  const gateways: SpendRecovery[] = [];
  const gateway = () => {
    // The records this gateway appended that are not yet in PostgreSQL, as its journal keeps them.
    const unconfirmed: { requestId: string; keyId: string; payerId: string; timestamp: string; costUsd: number }[] = [];
    const journal = { unconfirmed: () => unconfirmed } as unknown as AuditJournal;
    const spend = new SpendRecovery(database.knex, journal, ledger, { retryMs: 60_000 });
    gateways.push(spend);
    const deps: EnforcementDeps = { store, spend, clock: () => now };
    return {
      deps,
      spend,
      /** A request reserved and settled at `actual`, its audit record appended to this gateway's journal. */
      async settledRequest(id: string, actual: number) {
        const reservation = await enforce(deps, key, 0.25, id, () => 60_000);
        unconfirmed.push({ requestId: id, keyId: key.id, payerId: payer, timestamp: new Date(now).toISOString(), costUsd: actual });
        await reservation.settle(actual);
      },
    };
  };
  const counterKey = budgetWindow(key.id, 'monthly', new Date(now)).counterKey;
  return {
    raw,
    door,
    key,
    gateway,
    /** The store loses the key's counter and the payer's mirror. */
    lose: () => raw.del(counterKey, walletKey(payer), walletLeasesKey(payer)),
    /** The key's counted spend and in-flight total, and the payer's mirror, in nano-USD. */
    async counted() {
      const counter = await raw.hashGetAll(counterKey);
      return { spent: Number(counter['0']), reserved: Number(counter[reservedField]), mirror: Number(await raw.get(walletKey(payer))) };
    },
    rebuildAll: (spend: SpendRecovery) =>
      Promise.all([
        spend.rebuildBudget(store, key, budgetWindow(key.id, 'monthly', new Date(now)), new Date(now)),
        spend.rebuildWallet(payer, walletKey(payer)),
      ]),
    close: async () => {
      for (const spend of gateways) await spend.stop(0);
      await raw.close();
    },
  };
}

/** A first request ($0.10) whose settlement the store refuses (owed), then the store loses the counter and mirror. */
async function owedThenLost(w: Awaited<ReturnType<typeof world>>, a: ReturnType<Awaited<ReturnType<typeof world>>['gateway']>) {
  w.door.refuse = true;
  await expect(a.settledRequest('req-1', 0.1)).rejects.toThrow('connection lost');
  expect(a.spend.owedCount).toBe(1);
  await w.lose();
}

/** The counter and mirror once both requests' costs are counted exactly once. */
const countedOnce = (usd: number) => ({ spent: toNano(usd), reserved: 0, mirror: toNano(5 - usd) });

test('an owed settlement leaves a counter and a mirror its own gateway rebuilt meanwhile alone', async () => {
  const w = await world();
  try {
    const a = w.gateway();
    await owedThenLost(w, a);
    w.door.refuse = false;
    // The next request rebuilds both (the first one's cost from the journal), then the owed settlement is taken.
    await a.settledRequest('req-2', 0.02);
    await waitFor('the owed settlement to be taken', () => a.spend.owedCount === 0);
    expect(await w.counted()).toEqual(countedOnce(0.12));
  } finally {
    await w.close();
  }
});

test("another gateway's rebuild, not knowing the owed request's record, came first: the owed settlement counts it", async () => {
  const w = await world();
  try {
    const a = w.gateway();
    const b = w.gateway();
    await owedThenLost(w, a);
    w.door.refuse = false;
    // B rebuilds both without A's record (in A's journal only); A's own rebuild then finds them there.
    await b.settledRequest('req-2', 0.02);
    await w.rebuildAll(a.spend);
    a.spend.storeAnswered();
    await waitFor('the owed settlement to be taken', () => a.spend.owedCount === 0);
    expect(await w.counted()).toEqual(countedOnce(0.12));
  } finally {
    await w.close();
  }
});

test('a rebuild while a retry of the owed settlement is under way still leaves the rebuilt counter to the rebuild', async () => {
  const w = await world();
  try {
    const a = w.gateway();
    await owedThenLost(w, a);
    // A retry round starts and its attempt waits at the store's door; meanwhile a request rebuilds both.
    let open!: () => void;
    w.door.held = new Promise<void>((resolve) => (open = resolve));
    a.spend.storeAnswered();
    w.door.refuse = false;
    await w.rebuildAll(a.spend);
    // The waiting attempt is refused after all; the next round takes it.
    w.door.refuse = true;
    const refused = w.door.refused;
    open();
    w.door.held = undefined;
    await waitFor('the waiting attempt to be refused', () => w.door.refused > refused);
    expect(a.spend.owedCount).toBe(1);
    w.door.refuse = false;
    await a.settledRequest('req-2', 0.02);
    await waitFor('the owed settlement to be taken', () => a.spend.owedCount === 0);
    expect(await w.counted()).toEqual(countedOnce(0.12));
  } finally {
    await w.close();
  }
});
