import { onTestFinished, test } from 'vitest';
import assert from 'node:assert/strict';
import { ApiError } from '../../../core/errors/index.js';
import { MemoryStore } from '../../../core/store/index.js';
import { waitFor } from '../../../test/support/wait-for.js';
import { SupplierHealth } from './supplier-health.js';

const policy = { failureThreshold: 3, windowMs: 10_000, cooldownMs: 1_000 };
const failure = new ApiError('upstream_error');

test('the circuit opens at the threshold, closes after the cooldown, and re-opens on the first failure after', async () => {
  let now = 1_000_000;
  const store = new MemoryStore('t:', () => now);
  onTestFinished(() => store.close());
  const health = new SupplierHealth(store, policy, () => now);
  await health.recordFailure('a', failure);
  await health.recordFailure('a', failure);
  assert.equal(health.isOpen('a'), false);
  await health.recordFailure('a', failure);
  assert.equal(health.isOpen('a'), true);
  assert.equal(health.isOpen('b'), false);
  now += 1_001;
  assert.equal(health.isOpen('a'), false, 'closed after the cooldown');
  await health.recordFailure('a', failure);
  assert.equal(health.isOpen('a'), true, 'half-open: one failure soon after re-opens it');
});

test('a 429 with Retry-After cools the supplier down for that long at once', async () => {
  let now = 5_000_000;
  const store = new MemoryStore('t:', () => now);
  onTestFinished(() => store.close());
  const health = new SupplierHealth(store, policy, () => now);
  await health.recordFailure('a', new ApiError('rate_limit_exceeded', { retryAfterSeconds: 5 }));
  assert.equal(health.isOpen('a'), true);
  now += 4_000;
  assert.equal(health.isOpen('a'), true, 'Retry-After (5 s) outlasts the 1 s cooldown');
  now += 1_100;
  assert.equal(health.isOpen('a'), false);
});

test('a success clears the failure count; another replica learns of an opened circuit', async () => {
  // One fixed clock: the circuit's cooldown cannot run out while replica b learns of it.
  const now = 9_000_000;
  const store = new MemoryStore('t:', () => now);
  onTestFinished(() => store.close());
  const a = new SupplierHealth(store, policy, () => now);
  const b = new SupplierHealth(store, policy, () => now);
  await b.start();
  onTestFinished(() => b.stop());
  await a.recordFailure('s', failure);
  await a.recordFailure('s', failure);
  await a.recordSuccess('s');
  await a.recordFailure('s', failure);
  assert.equal(a.isOpen('s'), false, 'the count restarted after the success');
  await a.recordFailure('s', failure);
  await a.recordFailure('s', failure);
  assert.equal(a.isOpen('s'), true);
  await waitFor('replica b to skip the supplier too', () => b.isOpen('s'));
  const late = new SupplierHealth(store, policy, () => now);
  await late.load(['s']);
  assert.equal(late.isOpen('s'), true, 'a replica starting later loads the open circuit');
});
