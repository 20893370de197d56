// A subscription asked for while Redis is down is made once Redis answers (found in review): the
// gateway started during an outage subscribed to nothing, so it missed every key revocation,
// circuit and policy announcement until its next restart.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { Redis } from 'ioredis';
import { afterEach, test } from 'vitest';
import { waitFor } from '../../test/support/wait-for.js';
import { freePort } from '../../test/support/free-port.js';
import { RedisStore } from './redis-store.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const hasRedisServer = ['/usr/bin/redis-server', '/usr/local/bin/redis-server'].some(existsSync);

test.skipIf(!hasRedisServer)(
  'a subscription made while Redis is down receives messages once Redis is up',
  { timeout: 30_000 },
  async () => {
    const port = await freePort();
    const store = new RedisStore(`redis://127.0.0.1:${port}`, 'outage-sub:', { timeoutMs: 200 });
    cleanups.push(() => store.close());
    const heard: string[] = [];
    // Redis is down: the call returns (bounded), it does not hold the caller.
    await store.subscribe('announcements', (message) => heard.push(message));

    const server: ChildProcess = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      {
        stdio: 'ignore',
      },
    );
    cleanups.push(() => void server.kill('SIGKILL'));
    const publisher = new Redis(port, '127.0.0.1', { lazyConnect: true, retryStrategy: () => 50 });
    publisher.on('error', () => undefined);
    cleanups.push(() => void publisher.disconnect());
    await waitFor('Redis to listen', async () => (await publisher.ping().catch(() => '')) === 'PONG', 10_000);
    // Published until heard: the subscriber reconnects on its own schedule.
    await waitFor(
      'the announcement to be heard',
      async () => {
        await publisher.publish('outage-sub:announcements', 'key revoked');
        return heard.includes('key revoked');
      },
      20_000,
    );
  },
);
