import type { ServerResponse } from 'node:http';

/**
 * How long a client may take nothing before its answer is given up: a client that keeps its
 * connection open and never reads would otherwise hold the relay (and the supplier's connection,
 * the request's settlement and its audit record) for good. Ending it is the client going away.
 */
export const clientStallMs = 30_000;

/**
 * Waits until the client's connection takes more (`drain`) or is gone (`close`). A relay that
 * writes whatever the supplier sends without waiting holds the whole answer in memory for a
 * client that does not read: 44 such clients on a 48 MB stream took the process to 2.75 GB. While
 * it waits the supplier's body is not read, so the supplier is slowed to the client's pace. A
 * client that takes nothing for `stallMs` is cut off, as a client that left. Answers how long it
 * waited (ms), which the caller keeps: a supplier timing out meanwhile is not the supplier's fault.
 */
export async function drained(raw: ServerResponse, stallMs = clientStallMs): Promise<number> {
  if (!raw.writableNeedDrain || raw.destroyed) return 0;
  const since = performance.now();
  await new Promise<void>((resolve) => {
    const stalled = setTimeout(() => {
      raw.destroy();
      done();
    }, stallMs);
    const done = () => {
      clearTimeout(stalled);
      raw.off('drain', done);
      raw.off('close', done);
      resolve();
    };
    raw.on('drain', done);
    raw.on('close', done);
  });
  return performance.now() - since;
}
