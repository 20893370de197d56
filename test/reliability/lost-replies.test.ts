// A reply PostgreSQL sent that never arrives (found by an outside probe: a proxy swallowing bytes
// for 15 s, then forwarding again): the waiting query waited for ever — the audit writer stopped
// on a COMMIT until restart — and the pool kept handing out the connection stuck behind it. Now a
// query past its reply bound fails, its connection is closed, and the next query gets a new one.
// Runs on both databases: the embedded one is served on a loopback socket too.
import { createServer, connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { openDatabase, type Database } from '../../core/db/index.js';
import { createTestDatabase } from '../../core/db/testing.js';

/** A loopback proxy that can lose bytes (either way) while keeping every connection open. */
async function startLossyProxy(targetPort: number) {
  let losing = false;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(targetPort, '127.0.0.1');
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => undefined);
    }
    client.on('data', (bytes: Buffer) => void (losing || upstream.write(bytes)));
    upstream.on('data', (bytes: Buffer) => void (losing || client.write(bytes)));
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    lose: () => void (losing = true),
    forward: () => void (losing = false),
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

let direct: Database;
let proxy: Awaited<ReturnType<typeof startLossyProxy>>;
let proxied: Database;
beforeAll(async () => {
  direct = await createTestDatabase();
  const target = new URL(direct.url);
  proxy = await startLossyProxy(Number(target.port || 5432));
  target.host = `127.0.0.1:${proxy.port}`;
  // One connection: a stuck one handed out again would stall the next query for good.
  proxied = await openDatabase({
    kind: 'postgres',
    url: target.toString(),
    poolMax: 1,
    replyBounds: { queryTimeoutMs: 500, idleInTransactionMs: 5_000 },
  });
});
afterAll(async () => {
  proxy?.forward();
  await proxied?.close();
  await proxy?.close();
  await direct?.close();
});

describe('a reply that never arrives', () => {
  test('fails the query within its bound, and the next query gets a new connection', async () => {
    const value = async (n: number) => ((await proxied.knex.raw(`select ${n} as n`)) as { rows: { n: number }[] }).rows[0]!.n;
    expect(await value(1)).toBe(1);
    // The server cancels a slow statement before the client gives up on its reply (a PostgreSQL
    // server applies the start-up setting; the embedded one keeps one session for every connection).
    if (process.env.DATABASE_URL) {
      const shown = (await proxied.knex.raw('show statement_timeout')) as { rows: { statement_timeout: string }[] };
      expect(shown.rows[0]!.statement_timeout).toBe('400ms');
    }
    proxy.lose();
    await expect(value(2)).rejects.toThrow(/Query read timeout/);
    proxy.forward();
    expect(await value(3)).toBe(3);
    // Inside a transaction too: the lost COMMIT's connection is not reused.
    proxy.lose();
    await expect(proxied.knex.transaction(async (trx) => trx.raw('select 4'))).rejects.toThrow();
    proxy.forward();
    expect(await value(5)).toBe(5);
  });
});
