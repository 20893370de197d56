import { onTestFinished, test, vi } from 'vitest';
import assert from 'node:assert/strict';
import { waitFor as until } from '../../../test/support/wait-for.js';
import { retryDelayMs, WorkQueue } from './work-queue.js';

const options = { concurrency: 4, baseRetryMs: 5, maxRetryMs: 40, random: () => 1 };

/**
 * Runs everything already queued as microtasks (a finished run's bookkeeping, which starts any
 * follow-up run synchronously), since those always precede a setImmediate callback.
 */
const settled = () => new Promise((resolve) => setImmediate(resolve));

/** A queue stopped after the test, whether it passed or not; `unblock` first lets held work end. */
function stoppedAfterTest(queue: WorkQueue, unblock: () => void = () => undefined): WorkQueue {
  onTestFinished(() => {
    unblock();
    return queue.stop();
  });
  return queue;
}

test('a key is never worked on twice at once; an add during work runs it once more afterwards', async () => {
  let running = 0;
  let maxRunning = 0;
  let runs = 0;
  let finished = 0;
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const queue = stoppedAfterTest(
    new WorkQueue(async () => {
      running += 1;
      maxRunning = Math.max(maxRunning, running);
      runs += 1;
      if (runs === 1) await gate;
      running -= 1;
      finished += 1;
      return {};
    }, options),
    () => release(),
  );
  queue.add('ns/a');
  await until('the first run to start', () => runs === 1);
  queue.add('ns/a');
  queue.add('ns/a');
  queue.add('ns/a');
  assert.equal(runs, 1, 'adds during work do not start a second worker');
  release();
  await until('the follow-up run to finish', () => finished === 2);
  await settled(); // a third run would have started by now
  assert.equal(runs, 2, 'several adds during work collapse into one follow-up run');
  assert.equal(queue.depth, 0, 'and nothing waits');
  assert.equal(maxRunning, 1, 'the key never ran twice at once');
});

test('waiting keys are deduplicated and different keys run in parallel', async () => {
  const seen: string[] = [];
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const queue = stoppedAfterTest(
    new WorkQueue(
      async (key) => {
        seen.push(key);
        await gate;
        return {};
      },
      { ...options, concurrency: 1 },
    ),
    () => release(),
  );
  queue.add('a');
  queue.add('b');
  queue.add('b');
  queue.add('c');
  assert.equal(queue.depth, 2, 'b waits once, c once');
  release();
  await until('all keys', () => seen.length === 3);
  assert.deepEqual(seen, ['a', 'b', 'c'], 'each key ran once, in order');
});

test('a failing key is retried with growing delays and the count resets on success', async () => {
  let attempts = 0;
  const queue = stoppedAfterTest(
    new WorkQueue(async () => {
      attempts += 1;
      if (attempts <= 3) throw new Error('not yet');
      return {};
    }, options),
  );
  queue.add('k');
  await until('the fourth attempt', () => attempts === 4);
  await until('the success to reset the failures', () => queue.failuresOf('k') === 0);
  assert.deepEqual(
    [1, 2, 3, 4, 5].map((n) => retryDelayMs(n, options, () => 1)),
    [5, 10, 20, 40, 40],
    'delays double up to the cap',
  );
  assert.equal(
    retryDelayMs(3, options, () => 0),
    10,
    'jitter takes at most half the delay off',
  );
});

test('a requested requeue comes back after its delay; stop drops scheduled work', async () => {
  // The delays are timers: fake ones show the run comes at the delay, and never after stop.
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  onTestFinished(() => void vi.useRealTimers());
  let runs = 0;
  const queue = stoppedAfterTest(
    new WorkQueue(async () => {
      runs += 1;
      return runs === 1 ? { requeueAfterMs: 10 } : {};
    }, options),
  );
  queue.add('k');
  await settled();
  assert.equal(runs, 1);
  await vi.advanceTimersByTimeAsync(9);
  assert.equal(runs, 1, 'not before its delay');
  await vi.advanceTimersByTimeAsync(1);
  assert.equal(runs, 2, 'the requeued run');
  queue.addAfter('k', 10_000);
  await queue.stop();
  queue.add('k');
  await vi.advanceTimersByTimeAsync(10_000);
  await settled();
  assert.equal(runs, 2, 'nothing runs after stop, neither added nor scheduled before');
});

test('longestRunningMs reports how long the oldest reconcile in progress has run, 0 when idle', async () => {
  let release: () => void = () => undefined;
  const queue = stoppedAfterTest(
    new WorkQueue(
      () =>
        new Promise((resolve) => {
          release = () => resolve({});
        }),
      options,
    ),
    () => release(),
  );
  assert.equal(queue.longestRunningMs(), 0);
  const before = Date.now();
  queue.add('ns/hung');
  await settled();
  // A reconcile that never returns: its age grows with the clock the health check reads.
  assert.ok(queue.longestRunningMs(before + 10 * 60_000) >= 10 * 60_000 - 50);
  release();
  await until('the reconcile to end', () => queue.longestRunningMs() === 0);
});
