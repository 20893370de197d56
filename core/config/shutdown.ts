/**
 * Runs `stop` once on SIGTERM or SIGINT and exits: 0 when it finished, 1 when it failed. What
 * every deployable's main does after starting; `what` says what stopping means, in the log.
 */
export function stopOnSignals(stop: () => Promise<void>, what: string): void {
  const shutdown = (signal: string) => {
    console.log(`${signal}: ${what}`);
    stop().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error('shutdown failed', error);
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
}
