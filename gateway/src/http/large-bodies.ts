// A body of megabytes costs the serving thread a fraction of a second to check and parse (8 MB:
// ~10 ms UTF-8, ~70 ms depth scan, ~130 ms JSON.parse when it holds 300,000 parts), all of it
// in one piece. An outside probe sent 16 such bodies at once with a valid key: other clients'
// requests and /health waited 5–14 s, and the process grew past its memory limit. Large bodies
// are therefore parsed one at a time, each step in its own turn of the event loop, so requests
// of ordinary size are served between them and only one large parse is in memory at once.

import { ApiError } from '../../../core/errors/index.js';

/** Bodies above this many bytes are large: parsed through the gate. */
export const largeBodyBytes = 1024 * 1024;

/**
 * Bytes of large bodies that may wait for their turn at once: what a burst of uploads can hold in
 * memory on top of the one being parsed. Past it a body is refused at once (429
 * capacity_exceeded, retry after a second) instead of queuing without end — a client with a valid
 * key sending hundreds of 10 MB bodies would otherwise grow the process until it is killed.
 */
export const maxWaitingLargeBodyBytes = 160 * 1024 * 1024;

/**
 * Runs tasks one at a time, in arrival order; a task that fails does not stop the ones after it.
 * Each task names the bytes it holds while it waits; past `maxWaitingBytes` it is refused.
 */
export class OneAtATime {
  private tail: Promise<unknown> = Promise.resolve();
  private waitingBytes = 0;

  constructor(private readonly maxWaitingBytes = maxWaitingLargeBodyBytes) {}

  run<T>(bytes: number, task: () => Promise<T>): Promise<T> {
    if (this.waitingBytes + bytes > this.maxWaitingBytes && this.waitingBytes > 0)
      return Promise.reject(
        new ApiError('capacity_exceeded', {
          retryAfterSeconds: 1,
          humanMessage: 'Too many large request bodies are waiting to be read; retry after the Retry-After delay',
        }),
      );
    this.waitingBytes += bytes;
    const result = this.tail.then(() => {
      this.waitingBytes -= bytes;
      return task();
    });
    this.tail = result.catch(() => undefined);
    return result;
  }
}
