export interface StopOnSignalsOptions {
  /** How long the stop may take before the process exits anyway (1). */
  deadlineMs?: number;
  /**
   * The line that tells whoever started the process it is ready, printed once the handlers are in
   * place: printed before them, a SIGTERM sent on reading it found none and ended the process by
   * the signal, with nothing closed (CI's start test did, on a busy machine).
   */
  ready?: string;
}

/**
 * Runs `stop` once on SIGTERM or SIGINT, then exits (1 if it failed). A stop that does not finish
 * by `deadlineMs` — a dependency that never answers (a frozen Redis or PostgreSQL), a close that
 * waits on it — exits anyway (1), logged: a pod left in Terminating, with its ports already
 * closed, helps nobody, and what was answered is in the durable buffer. A second signal (npm and
 * the terminal both pass on Ctrl-C) is noted and changes nothing: the stop already under way
 * closes the embedded database cleanly.
 */
export function stopOnSignals(stop: () => Promise<void>, what: string, options: StopOnSignalsOptions = {}): void {
  const deadlineMs = options.deadlineMs ?? 60_000;
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return void console.log(`${signal} again: still ${what}`);
    stopping = true;
    console.log(`${signal}: ${what}`);
    setTimeout(() => {
      console.error(`shutdown did not finish within ${deadlineMs} ms (${what}): exiting`);
      process.exit(1);
    }, deadlineMs);
    stop().then(
      () => {
        console.log(`${signal}: stopped`);
        process.exit(0);
      },
      (error: unknown) => {
        console.error('shutdown failed', error);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  if (options.ready !== undefined) console.log(options.ready);
}
