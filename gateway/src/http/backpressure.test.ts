import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { expect, test } from 'vitest';
import { drained } from './backpressure.js';

/** A response whose client has not taken what was written. */
function backedUp(): ServerResponse & { destroyedBy: string[] } {
  const raw = Object.assign(new EventEmitter(), { writableNeedDrain: true, destroyed: false, destroyedBy: [] as string[] });
  return Object.assign(raw, {
    destroy() {
      raw.destroyed = true;
      raw.destroyedBy.push('stall');
      raw.emit('close');
      return raw;
    },
  }) as unknown as ServerResponse & { destroyedBy: string[] };
}

test('waits for the client to take more, and answers how long', async () => {
  const raw = backedUp();
  const waiting = drained(raw, 10_000);
  raw.emit('drain');
  expect(await waiting).toBeGreaterThanOrEqual(0);
  expect(raw.destroyedBy).toEqual([]);
  expect(raw.listenerCount('drain') + raw.listenerCount('close')).toBe(0);
});

test('a client that takes nothing for the stall limit is cut off, as a client that left', async () => {
  const raw = backedUp();
  await drained(raw, 20);
  expect(raw.destroyedBy).toEqual(['stall']);
  expect(raw.listenerCount('drain') + raw.listenerCount('close')).toBe(0);
});

test('nothing to wait for when the client keeps up', async () => {
  const raw = backedUp();
  (raw as unknown as { writableNeedDrain: boolean }).writableNeedDrain = false;
  expect(await drained(raw, 20)).toBe(0);
});
