// Writing with back-pressure (outside probe): each wait removes its listeners, whichever event
// ends it, and a client that leaves mid-wait ends the wait (the writer stops) instead of hanging.
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { writeOrGone } from './backpressure.js';

/** A response whose buffer is always full: every write waits. */
class FullSocket extends EventEmitter {
  destroyed = false;
  writableEnded = false;
  written: string[] = [];
  write(chunk: string) {
    this.written.push(chunk);
    return false;
  }
}

describe('writeOrGone', () => {
  it('leaves no listener behind however many times it waits for drain', async () => {
    const res = new FullSocket();
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    try {
      for (let i = 0; i < 50; i++) {
        const wrote = writeOrGone(res, `row ${i}\r\n`);
        res.emit('drain');
        expect(await wrote).toBe(true);
      }
      await new Promise((r) => setImmediate(r));
    } finally {
      process.off('warning', onWarning);
    }
    expect(res.written).toHaveLength(50);
    expect(res.listenerCount('close')).toBe(0);
    expect(res.listenerCount('drain')).toBe(0);
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
  });

  it('a client that leaves mid-wait ends the wait: false, and no listener left', async () => {
    const res = new FullSocket();
    const wrote = writeOrGone(res, 'row\r\n');
    res.destroyed = true;
    res.emit('close');
    const outcome = await Promise.race([wrote, new Promise((r) => setTimeout(() => r('still waiting'), 200))]);
    expect(outcome).toBe(false);
    expect(res.listenerCount('close')).toBe(0);
    expect(res.listenerCount('drain')).toBe(0);
    // Once gone, nothing more is written.
    expect(await writeOrGone(res, 'more\r\n')).toBe(false);
    expect(res.written).toEqual(['row\r\n']);
  });
});
