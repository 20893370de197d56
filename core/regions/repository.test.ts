import { onTestFinished, test } from 'vitest';
import assert from 'node:assert/strict';
import { createTestDatabase } from '../db/testing.js';
import { RegionPolicyRepository } from './repository.js';

test('policies are saved, reported changed only when they change, listed and deleted', async () => {
  const db = await createTestDatabase();
  onTestFinished(() => db.close());
  const repository = new RegionPolicyRepository(db.knex);
  const policy = { name: 'residency', regions: [{ region: 'EU', allowedSuppliers: ['sim-eu'] }], failurePolicy: 'HardFail' as const };
  assert.equal(await repository.save(policy), true, 'a new policy is a change');
  assert.equal(await repository.save(policy), false, 'saving the same policy again is not a change');
  const widened = { ...policy, regions: [{ region: 'EU', allowedSuppliers: ['sim-eu', 'sim-eu-2'] }] };
  assert.equal(await repository.save(widened), true, 'a different rule is a change');
  assert.deepEqual(await repository.list(), [widened], 'the stored policy is the latest');
  assert.equal(await repository.delete('residency'), true, 'the policy is deleted');
  assert.equal(await repository.delete('residency'), false, 'a second delete finds nothing');
  assert.deepEqual(await repository.list(), [], 'no policy is left');
});
