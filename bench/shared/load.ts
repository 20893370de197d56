// The load every request-rate benchmark uses: fixed concurrency for a fixed time with
// autocannon, non-streaming chat completions, and the CPU time the servers on the path spent.
import type { ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import autocannon from 'autocannon';

/** The median of `values` (the mean of the middle two for an even count). */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** One target's figures under the benchmark load. */
export interface LoadMeasurement {
  name: string;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  failed: number;
  total: number;
  /** CPU time of the measured server processes per request (µs); independent of core sharing. */
  cpuMicrosPerRequest: number | undefined;
  /**
   * The first server's main thread alone (µs per request): for the gateway, the serving event
   * loop, without V8's compiler and GC threads or the audit writer thread.
   */
  mainThreadMicrosPerRequest: number | undefined;
  /** Each measured server's own share of `cpuMicrosPerRequest`, in the order they were given. */
  cpuMicrosPerRequestByServer: number[];
}

/** User + system CPU seconds in a /proc stat file (a process's, or one thread's). */
export function statCpuSeconds(path: string): number {
  const stat = readFileSync(path, 'utf8');
  // After "pid (comm) ", utime and stime are fields 12 and 13 (0-based), in clock ticks (100/s).
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** CPU seconds (user + system) a process has used so far, all its threads, from /proc (Linux). */
export function cpuSeconds(pid: number): number {
  return statCpuSeconds(`/proc/${pid}/stat`);
}

/** CPU seconds of one process's main thread (its thread id is the process id). */
function mainThreadCpuSeconds(pid: number): number {
  return statCpuSeconds(`/proc/${pid}/task/${pid}/stat`);
}

/** The process and all its descendants (a gateway's cluster workers), from /proc (Linux). */
export function processTree(pid: number): number[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // exited meanwhile
    }
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i += 1) for (const [child, parent] of parents) if (parent === tree[i]) tree.push(child);
  return tree;
}

/** CPU seconds of a process and its descendants (threads are inside a process's own figure). */
function treeCpuSeconds(pids: readonly number[]): number {
  return pids.reduce((sum, pid) => {
    try {
      return sum + cpuSeconds(pid);
    } catch {
      return sum; // a process that exited during the run
    }
  }, 0);
}

/**
 * Seconds of the same load sent before measuring (BENCH_WARMUP, default 15). The gateway's
 * request path runs a few hundred functions once per request, so V8 keeps optimising them for
 * ~10,000 requests: after a 2 s warm-up its compiler threads still took ~140 µs per request
 * in the measured window and the main thread ran partly unoptimised code (bench/RESULTS.md).
 * A server that runs for days pays that once, so the figures are taken once it has settled.
 */
export const warmupSeconds = Number(process.env.BENCH_WARMUP ?? 15);

/**
 * Runs the load against `url` after the warm-up. `servers` are the processes whose CPU time
 * per request is reported: the cost that does not depend on sharing the cores.
 */
export async function measureLoad(
  name: string,
  url: string,
  headers: Record<string, string>,
  servers: ChildProcess[],
  load: {
    duration: number;
    connections: number;
    /** Called between the warm-up and the measured load (bench/profile's allocation sampler starts afresh). */
    afterWarmup?: () => void;
  },
): Promise<LoadMeasurement> {
  const body = JSON.stringify({
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'Summarise the benefits of a gateway in one line.' }],
    max_tokens: 64,
  });
  const options = {
    url,
    method: 'POST' as const,
    headers: { 'content-type': 'application/json', ...headers },
    body,
    connections: load.connections,
    pipelining: 1,
  };
  await autocannon({ ...options, duration: warmupSeconds }); // warm-up: JIT, pools, caches
  load.afterWarmup?.();
  // Each server with its child processes (SVC_WORKERS runs the gateway as several).
  const trees = servers.map((p) => processTree(p.pid!));
  const cpuBefore = trees.map(treeCpuSeconds);
  const mainPid = servers[0]?.pid;
  const mainBefore = mainPid === undefined ? 0 : mainThreadCpuSeconds(mainPid);
  const result = await autocannon({ ...options, duration: load.duration });
  const cpuUsedByServer = trees.map((tree, i) => treeCpuSeconds(tree) - cpuBefore[i]!);
  const cpuUsed = cpuUsedByServer.reduce((sum, used) => sum + used, 0);
  const mainUsed = mainPid === undefined ? 0 : mainThreadCpuSeconds(mainPid) - mainBefore;
  const failed = result.non2xx + result.errors + result.timeouts;
  if (failed > 0) console.warn(`${name}: ${failed} failed requests`);
  return {
    name,
    requestsPerSecond: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    failed,
    total: result.requests.total,
    cpuMicrosPerRequest: servers.length === 0 || result.requests.total === 0 ? undefined : (cpuUsed * 1e6) / result.requests.total,
    mainThreadMicrosPerRequest: mainPid === undefined || result.requests.total === 0 ? undefined : (mainUsed * 1e6) / result.requests.total,
    cpuMicrosPerRequestByServer: cpuUsedByServer.map((used) => (result.requests.total === 0 ? 0 : (used * 1e6) / result.requests.total)),
  };
}
