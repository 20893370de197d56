// What the features issue 16 asks for cost at the least, in Node: the bare proxy, the feature
// floor (bench/floor/floor-proxy.mjs) at levels 1–6 (each adds one feature), and the gateway,
// under the overhead load, one at a time on the same simulator, Redis and PostgreSQL. Rounds go
// forwards then backwards so that drift in this shared VM's speed falls on every target alike;
// the medians are printed as a table for bench/RESULTS.md.
//
//   npx tsx bench/floor/run.ts   (BENCH_ROUNDS=3, BENCH_DURATION=8, BENCH_WARMUP=15, BENCH_NODE;
//                                 needs DATABASE_URL and REDIS_URL: the floor's audit is Redis + PostgreSQL)
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { writeSimCatalogue } from '../shared/catalogue.js';
import { measureLoad, median, type LoadMeasurement } from '../shared/load.js';
import { runBench, withBenchServices } from '../shared/services.js';
import { serverNode, startBareProxy, startBenchGateway, startFloorProxy, stopProcess } from '../shared/start-process.js';

const ports = { sim: 18490, target: 18491 };
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const load = { duration: Number(process.env.BENCH_DURATION ?? 8), connections: 32 };

/** The floor's levels: each adds the feature named to the one before. */
const levels = [
  { level: 1, adds: 'fastify + undici, JSON parsed and re-serialised both ways, usage and cost read' },
  { level: 2, adds: "+ the presented key's HMAC and look-up" },
  { level: 3, adds: '+ the request log line (pino)' },
  { level: 4, adds: '+ metrics (prom-client, the gateway’s 8 series updates)' },
  { level: 5, adds: '+ the audit record appended to a Redis stream before answering' },
  { level: 6, adds: '+ the audit writer: stream → PostgreSQL in batches' },
];

type Target = { name: string; start: () => Promise<ChildProcess> };

async function main(): Promise<void> {
  await withBenchServices('floor', ports.sim, async ({ databaseUrl: benchDb, redisUrl, storePrefix, dir, pepper, secret }) => {
    const catalogue = writeSimCatalogue(dir, ports.sim);
    // The simulator and the load generator warm up first, or the first target pays for their JIT.
    await measureLoad('warm-up', `http://127.0.0.1:${ports.sim}/v1/chat/completions`, {}, [], { duration: 1, connections: 32 });
    const targets: Target[] = [
      { name: 'bare proxy', start: () => startBareProxy(ports.target, ports.sim) },
      ...levels.map(({ level }) => ({
        name: `floor ${level}`,
        start: () =>
          startFloorProxy({ port: ports.target, upstreamPort: ports.sim, level, pepper, secret, databaseUrl: benchDb, redisUrl }),
      })),
      {
        name: 'gateway',
        start: () =>
          startBenchGateway({ port: ports.target, pepper, catalogue, dataDir: join(dir, 'gw'), storePrefix, databaseUrl: benchDb }),
      },
    ];
    const results = new Map<string, LoadMeasurement[]>();
    for (let round = 0; round < rounds; round += 1) {
      const order = round % 2 === 0 ? targets : [...targets].reverse();
      for (const target of order) {
        const child = await target.start();
        try {
          const m = await measureLoad(
            target.name,
            `http://127.0.0.1:${ports.target}/v1/chat/completions`,
            { authorization: `Bearer ${secret}` },
            [child],
            load,
          );
          results.set(target.name, [...(results.get(target.name) ?? []), m]);
          console.log(
            `${target.name}: ${m.requestsPerSecond.toFixed(0)} req/s, ${m.cpuMicrosPerRequest?.toFixed(0)} µs CPU per request, ${m.failed} failed`,
          );
        } finally {
          await stopProcess(child);
        }
      }
    }
    const cpu = (name: string) => median(results.get(name)!.map((m) => m.cpuMicrosPerRequest ?? 0));
    const rps = (name: string) => median(results.get(name)!.map((m) => m.requestsPerSecond));
    const bare = cpu('bare proxy');
    const bareRps = rps('bare proxy');
    console.log(`\nmedians of ${rounds} rounds, ${load.duration} s each after a warm-up; servers on ${serverNode}:\n`);
    console.log('| target | adds | req/s | CPU µs/request | CPU × bare proxy | req/s × bare proxy |\n|---|---|---:|---:|---:|---:|');
    const describe = new Map(levels.map((l) => [`floor ${l.level}`, l.adds]));
    for (const { name } of targets) {
      console.log(
        `| ${name} | ${describe.get(name) ?? ''} | ${rps(name).toFixed(0)} | ${cpu(name).toFixed(0)} | ${(cpu(name) / bare).toFixed(2)} | ${(rps(name) / bareRps).toFixed(2)} |`,
      );
    }
  });
}

runBench(main);
