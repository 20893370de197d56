import { onTestFinished, test, vi } from 'vitest';
import assert from 'node:assert/strict';
import { KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { pino } from 'pino';
import { SupervisedInformer, type ListWatchInformer } from './supervised-informer.js';

/** An informer the test scripts: it reports what the library's would, when told to. */
class ScriptedInformer implements ListWatchInformer<KubernetesObject> {
  starts = 0;
  private readonly callbacks = new Map<string, ((value?: unknown) => void)[]>();
  on(verb: string, callback: (value: never) => void): void {
    this.callbacks.set(verb, [...(this.callbacks.get(verb) ?? []), callback as (value?: unknown) => void]);
  }
  emit(verb: 'add' | 'error' | 'connect', value?: unknown): void {
    for (const callback of this.callbacks.get(verb) ?? []) callback(value);
  }
  async start(): Promise<void> {
    this.starts += 1;
    this.emit('connect'); // as the library does at every start, before it lists or watches
  }
  async stop(): Promise<void> {}
  list(): KubernetesObject[] {
    return [];
  }
}

/** Runs what is queued on the microtask queue (a start's settling), which always precedes setImmediate. */
const settled = () => new Promise((resolve) => setImmediate(resolve));

test('restart backoff grows over consecutive failures and starts over after a normal watch end or an event', async () => {
  // The restart waits are timers: fake ones step exactly onto each restart.
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  onTestFinished(() => void vi.useRealTimers());
  const informer = new ScriptedInformer();
  const delays: number[] = [];
  const supervised = new SupervisedInformer(
    new KubeConfig(),
    {
      kind: 'Test',
      path: '/test',
      list: async () => ({ items: [] }),
      watchTimeoutSeconds: 60,
      baseRetryMs: 10,
      maxRetryMs: 10_000,
      logger: pino({ level: 'silent' }),
      onRestart: (ms) => delays.push(ms),
    },
    { onChange: () => undefined, onDelete: () => undefined },
    () => informer,
  );
  const failAndAwaitRestart = async () => {
    const starts = informer.starts;
    informer.emit('error', new Error('watch failed'));
    const delay = delays.at(-1)!;
    await vi.advanceTimersByTimeAsync(delay - 1);
    assert.equal(informer.starts, starts, `no restart before its ${delay} ms backoff`);
    await vi.advanceTimersByTimeAsync(1);
    assert.equal(informer.starts, starts + 1, 'restarted after the backoff');
    await settled();
  };
  supervised.start();
  onTestFinished(() => supervised.stop());
  await settled();
  for (let i = 0; i < 4; i++) await failAndAwaitRestart();
  // Jitter puts retry n in [50 %, 100 %] of 10 ms · 2^(n-1).
  assert.ok(delays[3]! >= 40, `the fourth retry in a row waits longer (${delays.join(', ')})`);

  informer.emit('connect'); // a watch ended without error (timeoutSeconds) and is resumed
  await failAndAwaitRestart();
  assert.ok(delays[4]! <= 10, `after a normal watch end the backoff starts over (${delays.join(', ')})`);

  for (let i = 0; i < 3; i++) await failAndAwaitRestart();
  informer.emit('add', { metadata: { name: 'x' } }); // the resumed watch delivered an event
  await failAndAwaitRestart();
  assert.ok(delays[8]! <= 10, `after an event the backoff starts over (${delays.join(', ')})`);
});
