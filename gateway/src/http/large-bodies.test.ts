import { test } from 'vitest';
import assert from 'node:assert/strict';
import { ApiError } from '../../../core/errors/index.js';
import { OneAtATime } from './large-bodies.js';

test('large bodies wait one behind another up to a byte budget; past it they are refused at once, and taken again once it drains', async () => {
  const gate = new OneAtATime(30);
  let release!: () => void;
  const first = gate.run(10, () => new Promise<string>((resolve) => (release = () => resolve('first'))));
  await new Promise((resolve) => setImmediate(resolve)); // its turn came: it is being parsed, not waiting
  const order: string[] = [];
  const waiting = [gate.run(10, async () => order.push('a')), gate.run(10, async () => order.push('b'))];
  // first is running (no longer waiting): 20 bytes wait; 10 more fit, 11 do not.
  const third = gate.run(10, async () => order.push('c'));
  const refused = await gate
    .run(1, async () => order.push('never'))
    .then(
      () => undefined,
      (error: unknown) => error,
    );
  assert.ok(refused instanceof ApiError);
  assert.equal(refused.code, 'capacity_exceeded');
  assert.equal(refused.status, 429);
  assert.equal(refused.retryAfterSeconds, 1);
  release();
  assert.equal(await first, 'first');
  await Promise.all([...waiting, third]);
  assert.deepEqual(order, ['a', 'b', 'c']);
  // Drained: a body is taken again, and one larger than the budget passes when nothing waits.
  assert.equal(await gate.run(100, async () => 'alone'), 'alone');
});
