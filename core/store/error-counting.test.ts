import { onTestFinished, test } from 'vitest';
import assert from 'node:assert/strict';
import { countStoreErrors } from './error-counting.js';
import { MemoryStore } from './memory-store.js';

test('countStoreErrors: failed commands are counted by operation and still reach the caller', async () => {
  const failures: string[] = [];
  const inner = new MemoryStore('count-test:');
  onTestFinished(() => inner.close()); // closing twice is harmless
  const store = countStoreErrors(inner, (operation) => failures.push(operation));
  await store.set('a', '1');
  assert.equal(await store.get('a'), '1', 'commands pass through');
  assert.equal(store.kind, 'memory', 'properties pass through');
  await store.close();
  await assert.rejects(() => store.ping(), 'a ping of a closed store fails');
  assert.deepEqual(failures, ['ping'], 'the failure is counted once, by method name');
});
