/**
 * Polls `check` every `intervalMs` until it holds; throws naming `what` after `timeoutMs`.
 * The timeout is a ceiling for a hung condition on a busy machine, never the assertion.
 */
export async function waitFor(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 30_000, intervalMs = 20): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
