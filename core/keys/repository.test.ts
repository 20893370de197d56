import { onTestFinished, test } from 'vitest';
import assert from 'node:assert/strict';
import { createTestDatabase } from '../db/testing.js';
import { KeyRepository } from './repository.js';
import { hashSecret } from './secrets.js';

const pepper = 'p'.repeat(40);

test('a created key is found by the hash of its secret; the secret itself is stored nowhere', async () => {
  const db = await createTestDatabase();
  onTestFinished(() => db.close());
  const keys = new KeyRepository(db.knex, pepper);
  const { record, secret } = await keys.create({
    kind: 'managed',
    name: 'ci',
    source: 'api',
    allowedModels: ['gpt-4o-mini'],
    budgetLimitUsd: 12.5,
    budgetPeriod: 'monthly',
    metadata: { team: 'a' },
  });
  assert.equal(record.status, 'active');
  const found = await keys.findByHash(hashSecret(secret, pepper));
  assert.deepEqual(found, record);
  assert.deepEqual(found?.allowedModels, ['gpt-4o-mini']);
  assert.equal(found?.budgetLimitUsd, 12.5);
  assert.equal(await keys.findByHash(hashSecret(secret, 'q'.repeat(40))), undefined);
  const dump = JSON.stringify(await db.knex('api_keys').select('*'));
  assert.ok(!dump.includes(secret), 'the clear secret must not be in the database');
  assert.ok(!dump.includes(secret.slice(7, 30)));
});

test('an operator key: created with a given secret and owner, found by its owner, rotated and deleted', async () => {
  const db = await createTestDatabase();
  onTestFinished(() => db.close());
  const keys = new KeyRepository(db.knex, pepper);
  const owner = 'ManagedKey/team-a/analytics/0b4c';
  const { record, secret } = await keys.create(
    { kind: 'managed', name: 'analytics', source: 'crd', managedBy: owner },
    'svc-sk-' + 'a'.repeat(40),
  );
  assert.equal(secret, 'svc-sk-' + 'a'.repeat(40), 'the given secret is the key');
  assert.equal(record.secretHash, hashSecret(secret, pepper), 'only the given secret hash is stored');
  assert.deepEqual(await keys.findByManagedBy(owner), record, 'the key is found by its owner');
  await assert.rejects(keys.create({ kind: 'managed', name: 'again', source: 'crd', managedBy: owner }), 'one owner cannot own two keys');
  assert.deepEqual(
    (await keys.listManagedByPrefix('ManagedKey/team-a/analytics/')).map((k) => k.id),
    [record.id],
    'the prefix finds every incarnation',
  );
  assert.deepEqual(await keys.listManagedByPrefix('ManagedKey/team-a/analytic_/'), [], 'the prefix is literal, not a LIKE pattern');
  const rotated = await keys.replaceSecret(record.id, 'svc-sk-' + 'b'.repeat(40));
  assert.equal(rotated?.secretHash, hashSecret('svc-sk-' + 'b'.repeat(40), pepper), 'the new secret hash replaces the old');
  assert.equal(await keys.findByHash(record.secretHash), undefined, 'the old secret no longer finds the key');
  assert.equal(await keys.delete(record.id), true, 'the key row is deleted');
  assert.equal(await keys.findById(record.id), undefined, 'the key is gone');
});
