import { finished, type Readable } from 'node:stream';

/**
 * Most bytes taken from a supplier's stream ahead of the relay before reading pauses: the relay
 * waits for a slow client (http/backpressure.ts), and the supplier is held back rather than the
 * gateway's memory growing. Undici's own body buffer is this size too.
 */
export const aheadLimitBytes = 64 * 1024;

/**
 * The chunks of a supplier's streamed body in order, then its end — or, after every chunk that
 * arrived, the failure that broke it. Reading starts when this is called, not at the first
 * `next()`: a caller that awaits something else first (the Anthropic lane's input count) loses
 * nothing that arrives meanwhile.
 *
 * Not `for await (… of body)`: Node's iterator of a Readable returns nothing of what is still
 * buffered once the stream is destroyed, and undici destroys a body whose connection closed before
 * the end. A supplier's last frames that arrived while the relay was busy (writing, waiting for the
 * client) were dropped when the cut followed them — a stream cut after its first content then
 * looked cut before any, an HTTP error instead of the partial answer and its in-stream error (seen
 * in 37 of 100 cuts with a relay that waits between chunks). Here each chunk is taken as undici
 * hands it over ('data'); only a pause for a client that reads slower than the supplier writes
 * (`limit` bytes ahead) leaves chunks in the body's own buffer, where a cut still drops them.
 *
 * Leaving early (`break`, `return()`) destroys the body, as Node's iterator does.
 */
export function bodyChunks(body: Readable, limit = aheadLimitBytes): AsyncGenerator<Buffer, void, undefined> {
  const queue: Buffer[] = [];
  let queued = 0;
  let ended = false;
  let failure: unknown;
  let wake: (() => void) | undefined;
  const notify = () => {
    const resolve = wake;
    wake = undefined;
    resolve?.();
  };
  const onData = (chunk: Buffer) => {
    queue.push(chunk);
    queued += chunk.length;
    if (queued >= limit) body.pause();
    notify();
  };
  body.on('data', onData);
  // Its error listener stays for the body's life: a late error with none would stop the process.
  finished(body, { writable: false }, (error) => {
    failure = error ?? undefined;
    ended = true;
    notify();
  });
  async function* read(): AsyncGenerator<Buffer, void, undefined> {
    try {
      for (;;) {
        const chunk = queue.shift();
        if (chunk !== undefined) {
          queued -= chunk.length;
          if (queued < limit && body.isPaused() && !ended) body.resume();
          yield chunk;
          continue;
        }
        if (ended) {
          if (failure !== undefined) throw failure;
          return;
        }
        await new Promise<void>((resolve) => (wake = resolve));
      }
    } finally {
      body.off('data', onData);
      if (!ended) body.destroy();
    }
  }
  return read();
}
