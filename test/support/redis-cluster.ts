// A Redis Cluster of three masters on loopback, for the suites that must hold on a sharded store
// (test/cluster/, started by vitest's global set-up: test/support/redis-cluster-global.ts). Debian's redis-server in cluster mode, each node a
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

/** The slots node `i` of `masters` serves: an even split. */
function slotRange(i: number, masters: number): { firstSlot: number; lastSlot: number } {
  return { firstSlot: Math.floor((i * slots) / masters), lastSlot: Math.floor(((i + 1) * slots) / masters) - 1 };
}

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

/** A running cluster: its seed URLs, comma-joined as REDIS_URL takes them, and each master's slots. */
export interface RedisCluster {
  url: string;
  nodes: { url: string; port: number; firstSlot: number; lastSlot: number }[];
  /** Shuts these nodes down without saving (their data is gone, as a crashed node's) and waits until their processes have exited. */
  shutDownNodes(indexes: readonly number[]): Promise<void>;
  /** Starts these nodes again after they were shut down (each rejoins with its slots; its data is gone) and waits until the cluster is whole. */
  restartNodes(indexes: readonly number[]): Promise<void>;
  stop(): Promise<void>;
}

interface ClusterNode {
  port: number;
  child: ChildProcess;
  client: Redis;
}

/** Starts redis-server in cluster mode on `port`, its files in `dir` (a restart reuses its nodes.conf). */
function spawnNode(dir: string, port: number): ChildProcess {
  return spawn(
    'redis-server',
    [
      ...['--port', String(port), '--bind', '127.0.0.1'],
      ...['--cluster-enabled', 'yes', '--cluster-config-file', join(dir, `nodes-${port}.conf`), '--cluster-node-timeout', '2000'],
      // A shard that is down takes only its own slots with it (docs/architecture.md, "Store sharding").
      ...['--cluster-require-full-coverage', 'no'],
      ...['--dir', dir, '--save', '', '--appendonly', 'no', '--logfile', join(dir, `redis-${port}.log`)],
    ],
    { stdio: 'ignore' },
  );
}

async function answers(node: ClusterNode): Promise<void> {
  await until(`node ${node.port} to answer`, async () => {
    if (node.child.exitCode !== null) throw new Error(`redis-server on ${node.port} exited (${node.child.exitCode})`);
    if (node.client.status === 'wait') await node.client.connect();
    return (await node.client.ping()) === 'PONG';
  });
}

async function whole(nodes: readonly ClusterNode[]): Promise<void> {
  for (const node of nodes) {
    await until(`node ${node.port} to see the whole cluster`, async () => {
      const info = String(await node.client.call('CLUSTER', 'INFO'));
      return (
        info.includes('cluster_state:ok') && info.includes(`cluster_known_nodes:${nodes.length}`) && info.includes('cluster_slots_ok:16384')
      );
    });
  }
}

/** Starts a cluster of `masters` nodes and waits until every node serves every slot. */
export async function startRedisCluster({ masters = 3 } = {}): Promise<RedisCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-redis-cluster-'));
  const taken = new Set<number>();
  const nodes: ClusterNode[] = [];
  const exited = (child: ChildProcess) =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });
  const stop = async () => {
    for (const node of nodes) node.client.disconnect();
    await Promise.all(nodes.map(({ child }) => exited(child)));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < masters; i++) {
      const port = await clusterPort(taken);
      const client = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => 50 });
      client.on('error', () => undefined);
      nodes.push({ port, child: spawnNode(dir, port), client });
    }
    for (const node of nodes) await answers(node);
    // Slots split evenly; every node meets the first, gossip does the rest.
    for (const [i, node] of nodes.entries()) {
      const { firstSlot, lastSlot } = slotRange(i, masters);
      await node.client.call('CLUSTER', 'ADDSLOTSRANGE', String(firstSlot), String(lastSlot));
      if (i > 0) await node.client.call('CLUSTER', 'MEET', '127.0.0.1', String(nodes[0]!.port));
    }
    await whole(nodes);
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    url: nodes.map((node) => `redis://127.0.0.1:${node.port}`).join(','),
    nodes: nodes.map((node, i) => ({ url: `redis://127.0.0.1:${node.port}`, port: node.port, ...slotRange(i, masters) })),
    shutDownNodes: async (indexes) => {
      for (const i of indexes) {
        const node = nodes[i]!;
        const gone = new Promise<void>((resolve) => {
          if (node.child.exitCode !== null || node.child.signalCode !== null) resolve();
          else node.child.once('exit', () => resolve());
        });
        // The node closes the connection as it goes: the reply never comes, the command fails at once (no retries).
        await node.client.call('SHUTDOWN', 'NOSAVE').catch(() => undefined);
        await gone;
      }
    },
    restartNodes: async (indexes) => {
      for (const i of indexes) {
        const node = nodes[i]!;
        await exited(node.child);
        node.child = spawnNode(dir, node.port);
      }
      for (const i of indexes) await answers(nodes[i]!);
      await whole(nodes);
    },
    stop,
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const cluster = await startRedisCluster();
  console.log(`REDIS_URL=${cluster.url} SVC_REDIS_CLUSTER=true`);
  const end = () => void cluster.stop().then(() => process.exit(0));
  process.once('SIGINT', end);
  process.once('SIGTERM', end);
}
