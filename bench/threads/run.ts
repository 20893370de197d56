// CPU per request of each thread of the gateway (or of the feature floor) under the overhead
// load: which thread pays for what the whole-process figure of bench:overhead adds up. Reads
// /proc/<pid>/task/*/stat before and after the measured load (after the warm-up); Linux only.
//
//   npx tsx bench/threads/run.ts   (BENCH_TARGET=gateway|floor, BENCH_DURATION=10, BENCH_WARMUP,
//                                   BENCH_NODE; needs DATABASE_URL and REDIS_URL, as bench/floor)
//
// Every thread of a Node process is named `node` except libuv's pool (`libuv-worker`). V8's
// platform threads (parallel and concurrent GC, the optimising compiler) start with the process,
// before libuv's pool; worker threads (the audit writer, the token counter) start later, so
// their roles are told apart by thread id order (as seen on Node 20 and 22). Worker threads are
// listed by id: under load the audit writer is the busy one, the token counter idles.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeSimCatalogue } from '../shared/catalogue.js';
import { measureLoad, statCpuSeconds } from '../shared/load.js';
import { runBench, withBenchServices } from '../shared/services.js';
import { serverNode, startBenchGateway, startFloorProxy, stopProcess } from '../shared/start-process.js';

interface ThreadTime {
  tid: number;
  name: string;
  cpuSeconds: number;
}

/** Each thread of `pid` with its name and CPU seconds so far (user + system). */
function threadTimes(pid: number): Map<number, ThreadTime> {
  const threads = new Map<number, ThreadTime>();
  for (const entry of readdirSync(`/proc/${pid}/task`)) {
    try {
      const name = readFileSync(`/proc/${pid}/task/${entry}/comm`, 'utf8').trim();
      threads.set(Number(entry), { tid: Number(entry), name, cpuSeconds: statCpuSeconds(`/proc/${pid}/task/${entry}/stat`) });
    } catch {
      // A thread that ended between the listing and the read.
    }
  }
  return threads;
}

/** The role of each thread, from its name and start order (see the header). */
function roleOf(thread: ThreadTime, pid: number, firstLibuv: number): string {
  if (thread.tid === pid) return 'serving (main) thread';
  if (thread.name.startsWith('libuv')) return "libuv's pool";
  if (thread.tid < firstLibuv) return "V8's helper threads (GC, compiler)";
  return `worker thread ${thread.tid}`;
}

const ports = { sim: 18690, target: 18691 };

async function main(): Promise<void> {
  const target = process.env.BENCH_TARGET ?? 'gateway';
  if (target !== 'gateway' && target !== 'floor') throw new Error(`BENCH_TARGET=${target}: gateway or floor`);
  const duration = Number(process.env.BENCH_DURATION ?? 10);
  await withBenchServices('threads', ports.sim, async ({ databaseUrl, redisUrl, storePrefix, dir, pepper, secret }) => {
    const server =
      target === 'floor'
        ? await startFloorProxy({ port: ports.target, upstreamPort: ports.sim, level: 6, pepper, secret, databaseUrl, redisUrl })
        : await startBenchGateway({
            port: ports.target,
            pepper,
            catalogue: writeSimCatalogue(dir, ports.sim),
            dataDir: join(dir, 'data'),
            storePrefix,
            databaseUrl,
          });
    try {
      const pid = server.pid!;
      let before = new Map<number, ThreadTime>();
      const m = await measureLoad(
        target,
        `http://127.0.0.1:${ports.target}/v1/chat/completions`,
        { authorization: `Bearer ${secret}` },
        [server],
        { duration, connections: 32, afterWarmup: () => (before = threadTimes(pid)) },
      );
      const after = threadTimes(pid);
      const libuv = [...after.values()].filter((t) => t.name.startsWith('libuv')).map((t) => t.tid);
      const firstLibuv = libuv.length > 0 ? Math.min(...libuv) : Number.POSITIVE_INFINITY;
      const byRole = new Map<string, number>();
      for (const thread of after.values()) {
        const used = thread.cpuSeconds - (before.get(thread.tid)?.cpuSeconds ?? 0);
        const role = roleOf(thread, pid, firstLibuv);
        byRole.set(role, (byRole.get(role) ?? 0) + used);
      }
      console.log(
        `${target} on ${serverNode}: ${m.requestsPerSecond.toFixed(0)} req/s, ${m.cpuMicrosPerRequest?.toFixed(0)} µs CPU per request, ${m.failed} failed\n`,
      );
      console.log('| thread | CPU µs/request |\n|---|---:|');
      for (const [role, seconds] of [...byRole].sort((a, b) => b[1] - a[1])) {
        console.log(`| ${role} | ${((seconds * 1e6) / m.total).toFixed(1)} |`);
      }
    } finally {
      await stopProcess(server);
    }
  });
}

runBench(main);
