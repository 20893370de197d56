import { test } from 'vitest';
import assert from 'node:assert/strict';
import { OwedAnnouncements } from './owed-announcements.js';

test('a failed announcement stays owed as an eviction until paid; a later success clears it', async () => {
  const evicted: string[] = [];
  let evictionFails = false;
  const owed = new OwedAnnouncements(async (id) => {
    if (evictionFails) throw new Error('store down');
    evicted.push(id);
  });
  await owed.announce('a', async () => undefined);
  assert.equal(owed.size, 0, 'a successful announcement leaves nothing owed');

  await assert.rejects(
    owed.announce('b', () => Promise.reject(new Error('store down'))),
    /store down/,
    'the failure reaches the caller (its reconcile is retried)',
  );
  await assert.rejects(
    owed.announce('c', () => Promise.reject(new Error('store down'))),
    /store down/,
    'a second failure as well',
  );
  await owed.announce('c', async () => undefined);
  assert.equal(owed.size, 1, 'a later successful announcement about c settles c; b is still owed');

  evictionFails = true;
  await assert.rejects(owed.payAll(), /store down/, 'paying while the store fails throws');
  assert.equal(owed.size, 1, 'and keeps the debt');
  evictionFails = false;
  await owed.payAll();
  assert.deepEqual([evicted, owed.size], [['b'], 0], 'the debt is paid by an eviction, once');
});
