import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase } from '../db/testing.js';
import { KeyRepository } from './repository.js';
import { hashSecret } from './secrets.js';

const pepper = 'p'.repeat(40);

test('a created key is found by the hash of its secret; the secret itself is stored nowhere', async () => {
  const db = await createTestDatabase();
  try {
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
  } finally {
    await db.close();
  }
});
