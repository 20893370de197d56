import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'vitest';
import { startTcpProxy, type TcpProxy } from '../../test/support/tcp-proxy.js';
import { connectionBounds } from '../db/index.js';
import { JobRunner } from './runner.js';

// pg-boss opens its own pool, which took none of the connection bounds of core/db: with
// PostgreSQL partitioned away (the proxy accepts connections and answers nothing), starting the
// queue — and every job a portal request sends — waited for as long as the partition lasted.
// Real PostgreSQL only: the embedded database has no connection to partition, and is not bounded.
const url = process.env.DATABASE_URL;
const quiet = { warn: () => undefined, error: () => undefined };

describe.skipIf(!url)('the job runner reaching a partitioned PostgreSQL', () => {
  let proxy: TcpProxy | undefined;
  afterEach(async () => {
    await proxy?.close();
    proxy = undefined;
  });

  test('fails to start after the connection bound instead of waiting for the partition', async () => {
    proxy = await startTcpProxy(Number(new URL(url!).port || 5432));
    proxy.blackHole();
    const through = new URL(url!);
    through.host = new URL(proxy.url).host;
    const runner = new JobRunner(through.toString(), { logger: quiet, connection: connectionBounds('postgres') });
    // Far above the 5 s bound; without it the start never ends.
    const gaveUp = new Promise<'still waiting'>((resolve) => setTimeout(() => resolve('still waiting'), 20_000).unref());
    const outcome = await Promise.race([
      runner.start().then(
        () => 'started',
        (error: unknown) => (error instanceof Error ? error.message : String(error)),
      ),
      gaveUp,
    ]);
    assert.match(outcome, /timeout/, `the start ended with: ${outcome}`);
  });
});
