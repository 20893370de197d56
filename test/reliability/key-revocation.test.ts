import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'vitest';
import { createTestDatabase } from '../../core/db/testing.js';
import type { Database } from '../../core/db/index.js';
import { announceKeyChange, KeyRepository, type KeyRecord } from '../../core/keys/index.js';
import { createTestStore } from '../../core/store/testing.js';
import type { Store } from '../../core/store/index.js';
import { KeyDirectory } from '../../gateway/src/auth/key-directory.js';
import { waitFor } from '../support/wait-for.js';
import { call, chat, startFaultBed, type FaultBed } from './fault-harness.js';

// Issue 13 finding 3: revocation and suspension win over every cache, whatever the store does.

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('the key cache never outlives a revoke', () => {
  test('a look-up that read "active" just before a revoke does not cache it after the revoke was announced', async () => {
    const database: Database = await createTestDatabase();
    cleanups.push(() => database.close());
    const store: Store = createTestStore();
    cleanups.push(() => store.close());
    const repository = new KeyRepository(database.knex, 'pepper');
    const { record } = await repository.create({ kind: 'managed', name: 'race', source: 'api' });

    // The first replica's read of PostgreSQL is held until the revoke has been announced.
    let releaseRead!: () => void;
    let readDone!: () => void;
    const readHappened = new Promise<void>((resolve) => (readDone = resolve));
    const held = new Promise<void>((resolve) => (releaseRead = resolve));
    const slowRepository = Object.create(repository) as KeyRepository;
    slowRepository.findByHash = async (hash: string) => {
      const found = await repository.findByHash(hash);
      readDone();
      await held;
      return found;
    };
    const first = new KeyDirectory(store, slowRepository);
    const lookUp = first.find(record.secretHash);
    await readHappened;
    await repository.update(record.id, { status: 'revoked' });
    await announceKeyChange(store, record.secretHash);
    releaseRead();
    assert.equal((await lookUp)?.status, 'active', 'the overlapping request saw the old row, as it may');

    // Every later look-up, on any replica, sees the revoke.
    const second = new KeyDirectory(store, repository);
    assert.equal((await second.find(record.secretHash))?.status, 'revoked', 'another replica does not find the stale record in the store');
    assert.equal((await first.find(record.secretHash))?.status, 'revoked', 'the first replica did not keep it either');
  });
});

describe('revoking while the store is unreachable', () => {
  let bed: FaultBed;
  afterEach(async () => bed?.close());

  test('answers 503 (not 500), and once the store is back the key stops working on every replica without any retry; a retried revoke answers 200', async () => {
    bed = await startFaultBed();
    const replica = await bed.startReplica();
    const created = await call(bed.gateway.url, '/v1/manage/keys', bed.adminKey, { name: 'to-revoke' });
    assert.equal(created.status, 201);
    const key = created.body.key as string;
    // Both replicas hold the key as active (process cache and store cache).
    assert.equal((await chat(bed.gateway.url, key)).status, 200);
    assert.equal((await chat(replica.url, key)).status, 200);

    await bed.outage.cut();
    const revoke = await call(bed.gateway.url, `/v1/manage/keys/${created.body.id}/revoke`, bed.adminKey, {});
    assert.equal(revoke.status, 503, JSON.stringify(revoke.body));
    assert.equal(revoke.body.error.code, 'service_unavailable');
    assert.match(revoke.body.error.message, /revoked in the database/);
    const row = (await new KeyRepository(bed.database.knex, 'unused').findById(created.body.id)) as KeyRecord;
    assert.equal(row.status, 'revoked', 'the database holds the revoke');

    await bed.outage.restore();
    // Nobody repeats the call: the owed announcement is paid by itself.
    for (const base of [bed.gateway.url, replica.url]) {
      await waitFor(
        `the revoked key to be refused by ${base}`,
        async () => (await chat(base, key)).body?.error?.code === 'expired_api_key',
        20_000,
        100,
      );
    }
    const retried = await call(bed.gateway.url, `/v1/manage/keys/${created.body.id}/revoke`, bed.adminKey, {});
    assert.equal(retried.status, 200);
    assert.equal(retried.body.status, 'revoked');
  });
});
