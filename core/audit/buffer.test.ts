import { onTestFinished, test } from 'vitest';
import assert from 'node:assert/strict';
import { MemoryStore } from '../store/memory-store.js';
import { createTestStore } from '../store/testing.js';
import type { Store } from '../store/types.js';
import { AuditBuffer } from './buffer.js';
import { parseAuditRecord } from './record.js';
import { sampleRecord } from './testing.js';

/** The store, counting its stream calls; it can fail them, or hold the next one until released. */
function observed(store: Store) {
  const calls: number[] = [];
  let failing = false;
  let holdNext = false;
  let release: (() => void) | undefined;
  const wrapped = Object.assign(Object.create(store) as Store, {
    async streamAddMany(stream: string, entries: readonly Record<string, string>[], options?: { maxLen?: number }) {
      calls.push(entries.length);
      if (failing) throw new Error('store down');
      if (holdNext) {
        holdNext = false;
        await new Promise<void>((resolve) => (release = resolve));
      }
      return store.streamAddMany(stream, entries, options);
    },
  });
  return {
    store: wrapped,
    calls,
    fail: (on: boolean) => void (failing = on),
    /** The next call waits until release(). */
    hold: () => void (holdNext = true),
    release: () => release?.(),
  };
}

test('appends made together go out in one store call; each resolves with its own entry id, in order', async () => {
  const inner = createTestStore();
  onTestFinished(() => inner.close());
  const o = observed(inner);
  const buffer = new AuditBuffer(o.store, { stream: `coalesce-${Date.now()}` });
  await inner.streamCreateGroup(buffer.stream, 'g');
  const ids = await Promise.all(Array.from({ length: 20 }, (_, i) => buffer.append(sampleRecord(i))));
  assert.deepEqual(o.calls, [20], 'one call for the twenty records');
  const read = await inner.streamReadGroup(buffer.stream, 'g', 'c', { count: 100, blockMs: 50 });
  assert.deepEqual(
    read.map((e) => e.id),
    ids,
  );
  assert.deepEqual(
    read.map((e) => parseAuditRecord(e.fields.r!).requestId),
    Array.from({ length: 20 }, (_, i) => sampleRecord(i).requestId),
  );
});

/** A buffer over a fresh memory store (closed after the test), with the store's calls observed. */
function onMemoryStore() {
  const inner = new MemoryStore('t:');
  onTestFinished(() => inner.close());
  const o = observed(inner);
  return { o, buffer: new AuditBuffer(o.store) };
}

test('a call still in flight does not hold the next records: they go out in a call of their own at once', async () => {
  const { o, buffer } = onMemoryStore();
  o.hold();
  const first = buffer.append(sampleRecord(1));
  await new Promise((r) => setImmediate(r)); // the first call leaves and is held
  assert.deepEqual(o.calls, [1]);
  const later = Array.from({ length: 5 }, (_, i) => buffer.append(sampleRecord(10 + i)));
  await Promise.all(later); // answered while the first call is still held: a failing store is not waited for twice
  assert.deepEqual(o.calls, [1, 5]);
  o.release();
  await first;
});

test('a failed call rejects every append it carried; the next appends go out and succeed', async () => {
  const { o, buffer } = onMemoryStore();
  o.fail(true);
  const failed = await Promise.allSettled([buffer.append(sampleRecord(1)), buffer.append(sampleRecord(2))]);
  assert.deepEqual(
    failed.map((r) => r.status),
    ['rejected', 'rejected'],
  );
  assert.match(String((failed[0] as PromiseRejectedResult).reason), /store down/);
  o.fail(false);
  const id = await buffer.append(sampleRecord(3));
  assert.match(id, /^\d+-\d+$/);
  assert.deepEqual(o.calls, [2, 1]);
});

test('a backlog larger than one call carries goes out in several calls, none lost', async () => {
  const { o, buffer } = onMemoryStore();
  const ids = await Promise.all(Array.from({ length: 600 }, (_, i) => buffer.append(sampleRecord(i))));
  assert.equal(new Set(ids).size, 600);
  assert.deepEqual(o.calls, [256, 256, 88]);
});
