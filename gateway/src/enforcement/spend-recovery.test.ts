// A settlement the store refused is owed; its request's audit record is written all the same. If
// the store then loses the key's counter and the payer's mirror, the rebuild reads that cost from
// the audit log (here the journal) — so the owed settlement, taken later, must leave the rebuilt
// counter and mirror alone, and the rebuild must not count its reservation either (review: the
// cost was counted twice, until the period ended).
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { AuditJournal } from '../../../core/audit/journal.js';
import { budgetWindow, reservedField, toNano } from '../../../core/budget/index.js';
import type { Database } from '../../../core/db/index.js';
import { createTestDatabase } from '../../../core/db/testing.js';
import type { KeyRecord } from '../../../core/keys/index.js';
import { MemoryStore, type Store } from '../../../core/store/index.js';
import { WalletLedger, walletKey, walletLeasesKey } from '../../../core/wallets/index.js';
import { waitFor } from '../../../test/support/wait-for.js';
import { enforce } from './enforce.js';
import { SpendRecovery } from './spend-recovery.js';

let database: Database;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database?.close();
});

test('an owed settlement leaves a counter and a mirror rebuilt meanwhile alone: its cost is counted once', async () => {
  const raw = new MemoryStore('owed:');
  let refuseSettlements = false;
  const store = Object.create(raw) as Store;
  store.runScript = (script, keys, args) =>
    refuseSettlements && script.name === 'settle_reservation'
      ? Promise.reject(new Error('connection lost (test)'))
      : raw.runScript(script, keys, args);
  const payer = `project:owed-${Date.now()}`;
  const ledger = new WalletLedger(database.knex, store);
  await ledger.credit(payer, 5, 'test funds', 'test');
  const key = {
    id: `key_owed${Date.now()}`,
    rateLimitRpm: null,
    budgetLimitUsd: 1,
    budgetPeriod: 'monthly',
    payerId: payer,
    payerCreditUsd: 0,
    organisationId: null,
    ownerUserId: null,
  } as unknown as KeyRecord;
  const now = Date.now();
  // The records appended but not yet in PostgreSQL, as the journal keeps them.
  const unconfirmed: { requestId: string; keyId: string; payerId: string; timestamp: string; costUsd: number }[] = [];
  const journal = { unconfirmed: () => unconfirmed } as unknown as AuditJournal;
  const spend = new SpendRecovery(database.knex, journal, ledger, { retryMs: 60_000 });
  const deps = { store, spend, clock: () => now };
  try {
    const first = await enforce(deps, key, 0.25, 'req-owed-1', () => 60_000);
    // The settlement is refused (owed); the request's audit record ($0.10) is in the journal.
    refuseSettlements = true;
    await expect(first.settle(0.1)).rejects.toThrow('connection lost');
    unconfirmed.push({ requestId: 'req-owed-1', keyId: key.id, payerId: payer, timestamp: new Date(now).toISOString(), costUsd: 0.1 });
    expect(spend.owedCount).toBe(1);
    // The store loses the key's counter and the payer's mirror, then answers again.
    const counterKey = budgetWindow(key.id, 'monthly', new Date(now)).counterKey;
    await raw.del(counterKey, walletKey(payer), walletLeasesKey(payer));
    refuseSettlements = false;
    // The next request rebuilds both (its cost from the journal), then the owed settlement is taken.
    const second = await enforce(deps, key, 0.05, 'req-owed-2', () => 60_000);
    await waitFor('the owed settlement to be taken', () => spend.owedCount === 0);
    await second.settle(0.02);
    const counter = await raw.hashGetAll(counterKey);
    expect([counter['0'], counter[reservedField]]).toEqual([String(toNano(0.12)), '0']);
    // The mirror: the ledger's $5 less both costs ($0.10 not yet written to the ledger, $0.02 settled).
    expect(Number(await raw.get(walletKey(payer)))).toBe(toNano(5 - 0.12));
  } finally {
    await spend.stop();
    await raw.close();
  }
});
