// Assertions the gateway's HTTP tests share: the catalogue error shape, and waiting for a state
// that arrives asynchronously (audit rows, propagated changes).
import assert from 'node:assert/strict';
import { waitFor } from './wait-for.js';

/** An HTTP answer with its JSON body parsed. */
export interface Reply {
  status: number;
  headers: Headers;
  body: Record<string, unknown> & { error?: { code: string; param: string | null; message: string; human_message: string } };
}

/** The reply is the catalogue error `code` with `status` (and `param`, when given), in the one error shape. */
export function expectError(reply: Reply, status: number, code: string, param?: string): void {
  assert.equal(reply.status, status, `status of ${JSON.stringify(reply.body)}`);
  assert.equal(reply.body.error?.code, code, `code of ${JSON.stringify(reply.body)}`);
  assert.equal(reply.body.error?.message, `${code} - ${reply.body.error?.human_message}`, 'message is "<code> - <human_message>"');
  if (param !== undefined) assert.equal(reply.body.error?.param, param, `param of ${JSON.stringify(reply.body)}`);
}

/** Probes every 100 ms until `done` holds, or fails naming `what` and the last value after `ms` (a ceiling, see waitFor). */
export async function eventually<T>(probe: () => Promise<T>, done: (v: T) => boolean, what: string, ms = 30_000): Promise<T> {
  let value: T | undefined;
  try {
    await waitFor(what, async () => done((value = await probe())), ms, 100);
  } catch (error) {
    throw new Error(`${(error as Error).message}: ${JSON.stringify(value).slice(0, 500)}`, { cause: error });
  }
  return value as T;
}
