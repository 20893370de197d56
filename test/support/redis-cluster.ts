// A Redis Cluster of three masters on loopback, for the suites that must hold on a sharded store
// (test/run-tests.mjs runs them against it). Debian's redis-server in cluster mode, each node a
// child process with its data in a temporary directory; slots split evenly, no replicas.
//
//   npx tsx test/support/redis-cluster.ts      starts one and prints its REDIS_URL until Ctrl-C
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';

const slots = 16384;

/** Whether a loopback port can be bound now. */
function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A port whose cluster bus port (+10000) is free too. */
async function clusterPort(taken: Set<number>): Promise<number> {
  for (let tries = 0; tries < 200; tries++) {
    const port = 20000 + Math.floor(Math.random() * 20000);
    if (taken.has(port) || taken.has(port + 10000)) continue;
    if ((await portFree(port)) && (await portFree(port + 10000))) {
      taken.add(port);
      taken.add(port + 10000);
      return port;
    }
  }
  throw new Error('no free port pair for a Redis Cluster node');
}

/** Polls `check` every 50 ms until it is true, or throws after `ms` naming what was awaited. */
async function until(what: string, check: () => Promise<boolean>, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  let last: Error | undefined;
  while (Date.now() < deadline) {
    try {
      if (await check()) return;
    } catch (error) {
      last = error as Error;
    }
    await sleep(50);
  }
  throw new Error(`Redis Cluster: timed out waiting for ${what}${last ? ` (${last.message})` : ''}`);
}

/**
 * Starts a cluster of `masters` nodes and waits until every node serves every slot.
 * Returns the seed URLs (comma-joined, as REDIS_URL takes them) and `stop()`.
 */
/** A running cluster: its seed URLs, comma-joined as REDIS_URL takes them. */
export interface RedisCluster {
  url: string;
  stop(): Promise<void>;
}

export async function startRedisCluster({ masters = 3 } = {}): Promise<RedisCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-redis-cluster-'));
  const taken = new Set<number>();
  const nodes: { port: number; child: ChildProcess; client: Redis | undefined }[] = [];
  const stop = async () => {
    for (const node of nodes) node.client?.disconnect();
    await Promise.all(
      nodes.map(
        ({ child }) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            child.once('exit', () => resolve());
            child.kill('SIGKILL');
          }),
      ),
    );
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < masters; i++) {
      const port = await clusterPort(taken);
      const child = spawn(
        'redis-server',
        [
          '--port',
          String(port),
          '--bind',
          '127.0.0.1',
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          join(dir, `nodes-${port}.conf`),
          '--cluster-node-timeout',
          '2000',
          '--dir',
          dir,
          '--save',
          '',
          '--appendonly',
          'no',
          '--logfile',
          join(dir, `redis-${port}.log`),
        ],
        { stdio: 'ignore' },
      );
      nodes.push({ port, child, client: undefined });
    }
    const clients: Redis[] = [];
    for (const node of nodes) {
      const client = new Redis({ host: '127.0.0.1', port: node.port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => 50 });
      client.on('error', () => undefined);
      node.client = client;
      clients.push(client);
      await until(`node ${node.port} to answer`, async () => {
        if (node.child.exitCode !== null) throw new Error(`redis-server on ${node.port} exited (${node.child.exitCode})`);
        if (client.status === 'wait') await client.connect();
        return (await client.ping()) === 'PONG';
      });
    }
    // Slots split evenly; every node meets the first, gossip does the rest.
    for (const [i, client] of clients.entries()) {
      const from = Math.floor((i * slots) / masters);
      const to = Math.floor(((i + 1) * slots) / masters) - 1;
      await client.call('CLUSTER', 'ADDSLOTSRANGE', String(from), String(to));
      if (i > 0) await client.call('CLUSTER', 'MEET', '127.0.0.1', String(nodes[0]!.port));
    }
    for (const [i, client] of clients.entries()) {
      await until(`node ${nodes[i]!.port} to see the whole cluster`, async () => {
        const info = String(await client.call('CLUSTER', 'INFO'));
        return info.includes('cluster_state:ok') && info.includes(`cluster_known_nodes:${masters}`);
      });
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { url: nodes.map((node) => `redis://127.0.0.1:${node.port}`).join(','), stop };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const cluster = await startRedisCluster();
  console.log(`REDIS_URL=${cluster.url} SVC_REDIS_CLUSTER=true`);
  const end = () => void cluster.stop().then(() => process.exit(0));
  process.once('SIGINT', end);
  process.once('SIGTERM', end);
}
