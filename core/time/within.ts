/** How a promise waited on with a bound ended. */
export type Settled = 'fulfilled' | 'rejected' | 'timed out';

/**
 * Waits for `promise` at most `ms`: how it ended, or 'timed out' (the promise goes on; its outcome
 * is ignored). For waits on a dependency that may never answer — a close, a goodbye, a best-effort
 * command during a shutdown — where waiting for ever is worse than giving up.
 */
export async function settledWithin(promise: Promise<unknown>, ms: number): Promise<Settled> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timed out'>((resolve) => {
    timer = setTimeout(() => resolve('timed out'), ms);
  });
  const outcome = await Promise.race([
    promise.then(
      () => 'fulfilled' as const,
      () => 'rejected' as const,
    ),
    timedOut,
  ]);
  clearTimeout(timer);
  return outcome;
}
