// A store first reached during an outage (found by an outside probe): commands queued until the
// client was first ready, so every command of a gateway started while Redis was down waited for
// the next failed reconnection, and each request took seconds. Once the first connection failed
// (or did not answer for the store timeout), commands fail at once, and work again once Redis is up.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { afterEach, expect, test } from 'vitest';
import { waitFor } from '../../test/support/wait-for.js';
import { freePort } from '../../test/support/free-port.js';
import { RedisStore } from './redis-store.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const hasRedisServer = ['/usr/bin/redis-server', '/usr/local/bin/redis-server'].some(existsSync);
/** ioredis's refusal of a command it would otherwise have queued for a later connection. */
const notQueued = /enableOfflineQueue options is false|Connection is closed/;

const failure = (command: Promise<unknown>) =>
  command.then(
    () => 'answered',
    (error: Error) => error.message,
  );

test.skipIf(!hasRedisServer)(
  'Redis down at start: after the first failed connection commands fail at once; once Redis is up they work',
  async () => {
    const port = await freePort();
    // A store timeout far past the test's own: a command that waited for it would time the test out.
    const store = new RedisStore(`redis://127.0.0.1:${port}`, 'start-outage:', { timeoutMs: 60_000 });
    cleanups.push(() => store.close());
    await failure(store.get('key')); // queued while the first connection is made, failed with it
    for (let i = 0; i < 5; i++) expect(await failure(store.get('key'))).toMatch(notQueued);

    const server: ChildProcess = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      {
        stdio: 'ignore',
      },
    );
    cleanups.push(() => void server.kill('SIGKILL'));
    await waitFor('the store to answer once Redis is up', async () => (await failure(store.set('key', 'value'))) === 'answered', 20_000);
    expect(await store.get('key')).toBe('value');
  },
);

test('Redis accepting connections but never answering at start: after the store timeout commands fail at once', async () => {
  const sockets = new Set<Socket>();
  const frozen = createServer((socket) => void sockets.add(socket.on('error', () => undefined)));
  await new Promise<void>((resolve) => frozen.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise<void>((resolve) => (sockets.forEach((s) => s.destroy()), frozen.close(() => resolve()))));
  const port = (frozen.address() as { port: number }).port;
  const store = new RedisStore(`redis://127.0.0.1:${port}`, 'frozen-start:', { timeoutMs: 300 });
  cleanups.push(() => store.close());
  expect(await failure(store.get('key'))).not.toBe('answered'); // waited for the store timeout
  await waitFor('the first connection to be given up on', async () => notQueued.test(await failure(store.get('key'))), 5_000);
});
