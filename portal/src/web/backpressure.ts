// Writing a long answer (a CSV streamed page by page) with back-pressure: the portal never buffers
// more than the socket takes, and stops as soon as the client has gone. The gateway has its own
// (gateway/src/http/backpressure.ts `drained`); deployables do not import each other.
import type { EventEmitter } from 'node:events';

/** The part of a response (or any writable stream) this needs. */
export interface WritableAnswer extends EventEmitter {
  write(chunk: string): boolean;
  readonly destroyed: boolean;
  readonly writableEnded: boolean;
}

/**
 * Writes `chunk`; when the socket's buffer is full, waits until it drains or the connection
 * closes — whichever comes first — and removes both listeners then (a listener left behind per
 * wait piled up to a MaxListenersExceededWarning on a long export; waiting for `drain` alone hung
 * the handler for good when the client left mid-wait). Answers false once the client is gone:
 * the caller stops writing (and stops reading rows).
 */
export async function writeOrGone(res: WritableAnswer, chunk: string): Promise<boolean> {
  if (res.destroyed || res.writableEnded) return false;
  if (res.write(chunk)) return true;
  if (res.destroyed) return false;
  return new Promise<boolean>((resolve) => {
    const drained = () => settle(true);
    const closed = () => settle(false);
    const settle = (open: boolean) => {
      res.off('drain', drained);
      res.off('close', closed);
      resolve(open && !res.destroyed);
    };
    res.on('drain', drained);
    res.on('close', closed);
  });
}
