// A body of megabytes costs the serving thread a fraction of a second to check and parse (8 MB:
// ~10 ms UTF-8, ~70 ms depth scan, ~130 ms JSON.parse when it holds 300,000 parts), all of it
// in one piece. An outside probe sent 16 such bodies at once with a valid key: other clients'
// requests and /health waited 5–14 s, and the process grew past its memory limit. Large bodies
// are therefore parsed one at a time, each step in its own turn of the event loop, so requests
// of ordinary size are served between them and only one large parse is in memory at once.

/** Bodies above this many bytes are large: parsed through the gate. */
export const largeBodyBytes = 1024 * 1024;

/** Runs tasks one at a time, in arrival order; a task that fails does not stop the ones after it. */
export class OneAtATime {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(task: () => Promise<T>): Promise<T> {
    const result = this.tail.then(task);
    this.tail = result.catch(() => undefined);
    return result;
  }
}
