import { afterEach, expect, test, vi } from 'vitest';
import { stopOnSignals } from './shutdown.js';

const before = { SIGTERM: process.listeners('SIGTERM'), SIGINT: process.listeners('SIGINT') };
afterEach(() => {
  vi.restoreAllMocks();
  for (const signal of ['SIGTERM', 'SIGINT'] as const)
    for (const listener of process.listeners(signal)) if (!before[signal].includes(listener)) process.off(signal, listener);
});

test('the ready line is printed only once SIGTERM and SIGINT are handled, so a signal sent on reading it is', () => {
  const handledWhenPrinted: Array<{ line: unknown; SIGTERM: number; SIGINT: number }> = [];
  vi.spyOn(console, 'log').mockImplementation((line: unknown) => {
    handledWhenPrinted.push({ line, SIGTERM: process.listenerCount('SIGTERM'), SIGINT: process.listenerCount('SIGINT') });
  });
  stopOnSignals(async () => {}, 'stopping', { ready: 'listening on http://127.0.0.1:1' });
  expect(handledWhenPrinted).toEqual([
    { line: 'listening on http://127.0.0.1:1', SIGTERM: before.SIGTERM.length + 1, SIGINT: before.SIGINT.length + 1 },
  ]);
});

test('without a ready line nothing is printed until a signal comes', () => {
  const log = vi.spyOn(console, 'log').mockImplementation(() => {});
  stopOnSignals(async () => {}, 'stopping');
  expect(log).not.toHaveBeenCalled();
  expect(process.listenerCount('SIGTERM')).toBe(before.SIGTERM.length + 1);
});
