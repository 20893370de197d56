// Where the gateway's CPU goes under load: runs the gateway process with V8's CPU profiler,
// drives the overhead benchmark's load through it, and prints self time by package / source
// area and the top functions, over the measured load only (after the warm-up). A diagnostic for
// hot-path work, not a result for RESULTS.md.
//
//   npx tsx bench/profile/run.ts         (BENCH_DURATION=10, BENCH_KEY=plain|enforced,
//                                          DATABASE_URL / REDIS_URL as for bench:overhead,
//                                          BENCH_TARGET=bare-proxy profiles the overhead benchmark's
//                                          bare proxy instead, under the same load, for comparison,
//                                          BENCH_TARGET=floor the feature floor (bench/floor) with
//                                          all its features, which needs DATABASE_URL and REDIS_URL,
//                                          BENCH_PROFILE=alloc samples allocations instead of CPU:
//                                          bytes per request by allocating function, the garbage
//                                          the scavenger and V8's helper threads pay for)
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateSecret } from '../../core/keys/index.js';
import { deleteKeysWithPrefix } from '../../core/store/testing.js';
import { createBenchDatabase, createBenchKey, dropBenchDatabase } from '../shared/databases.js';
import { writeSimCatalogue } from '../shared/catalogue.js';
import { measureLoad } from '../shared/load.js';
import { startBareProxy, startBenchGateway, startFloorProxy, startSimulator, stopProcess } from '../shared/start-process.js';

const duration = Number(process.env.BENCH_DURATION ?? 10);
const ports = { sim: 28190, gateway: 28191 };
const target = process.env.BENCH_TARGET ?? 'gateway';
if (!['gateway', 'bare-proxy', 'floor'].includes(target)) throw new Error(`BENCH_TARGET=${target}: gateway, bare-proxy or floor`);
const allocations = process.env.BENCH_PROFILE === 'alloc';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/**
 * The profile's last `seconds` before its last busy sample: the measured load, without start-up,
 * module loading and the warm-up (whose JIT compilation is a one-off), nor the idle tail.
 */
function measuredWindow(profile: CpuProfile, seconds: number): CpuProfile {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const times: number[] = [];
  let t = 0;
  for (const delta of profile.timeDeltas) times.push((t += delta));
  let lastBusy = times.length - 1;
  while (lastBusy > 0 && byId.get(profile.samples[lastBusy]!)!.callFrame.functionName === '(idle)') lastBusy--;
  const from = times[lastBusy]! - seconds * 1e6;
  const keep = times.map((time, i) => time >= from && i <= lastBusy);
  return {
    nodes: profile.nodes,
    samples: profile.samples.filter((_, i) => keep[i]),
    timeDeltas: profile.timeDeltas.filter((_, i) => keep[i]),
  };
}

/** The area a script belongs to: an npm package, a source folder, Node's internals, or V8/GC. */
function areaOf(url: string, name: string): string {
  if (!url) return name.startsWith('(') ? name : '(native)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  if (url.startsWith('node:')) return url.split('/').slice(0, 2).join('/');
  const own = /\/(core|gateway|test|bench)\/(?:src\/)?([^/]+)/.exec(url);
  return own ? `${own[1]}/${own[2]}` : url;
}

interface AllocationNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: AllocationNode[];
}

/** Bytes allocated per request by area and by allocating function (V8's sampled estimate). */
function summariseAllocations(head: AllocationNode, requests: number): string {
  const areas = new Map<string, number>();
  const functions = new Map<string, number>();
  let total = 0;
  const visit = (node: AllocationNode) => {
    const { functionName, url, lineNumber } = node.callFrame;
    const area = areaOf(url, functionName);
    const fn = `${functionName || '(anonymous)'} ${area}:${lineNumber + 1}`;
    total += node.selfSize;
    areas.set(area, (areas.get(area) ?? 0) + node.selfSize);
    functions.set(fn, (functions.get(fn) ?? 0) + node.selfSize);
    node.children.forEach(visit);
  };
  visit(head);
  const table = (m: Map<string, number>, n: number) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(
        ([k, bytes]) => `${((100 * bytes) / total).toFixed(1).padStart(5)} %  ${(bytes / requests).toFixed(0).padStart(6)} B/request  ${k}`,
      )
      .join('\n');
  return `${(total / requests / 1024).toFixed(1)} KiB allocated per request on the serving thread\n\nby area:\n${table(areas, 25)}\n\ntop allocating functions:\n${table(functions, 40)}`;
}

/** Resolves with the file's JSON once it exists (the sampler writes it asynchronously after SIGUSR2). */
async function written<T>(file: string): Promise<T> {
  for (let waited = 0; !existsSync(file); waited += 100) {
    if (waited > 30_000) throw new Error(`the allocation sampler wrote no ${file}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  // A file that exists may still be being written: wait until it parses.
  for (let waited = 0; ; waited += 100) {
    try {
      return JSON.parse(readFileSync(file, 'utf8')) as T;
    } catch (error) {
      if (waited > 30_000) throw new Error(`${file} is not a whole profile after 30 s`, { cause: error });
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/** Self time by area and by function, as shares of busy time and as µs per request served in the window. */
function summarise(profile: CpuProfile, requests: number): string {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const idle = [...self.entries()].filter(([id]) => byId.get(id)!.callFrame.functionName === '(idle)').reduce((a, [, t]) => a + t, 0);
  const busy = total - idle;
  const areas = new Map<string, number>();
  const functions = new Map<string, number>();
  for (const [id, time] of self) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    if (functionName === '(idle)') continue;
    const area = areaOf(url, functionName);
    areas.set(area, (areas.get(area) ?? 0) + time);
    const fn = `${functionName || '(anonymous)'} ${area}:${lineNumber + 1}`;
    functions.set(fn, (functions.get(fn) ?? 0) + time);
  }
  const table = (m: Map<string, number>, n: number) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, t]) => `${((100 * t) / busy).toFixed(1).padStart(5)} %  ${(t / requests).toFixed(1).padStart(6)} µs/request  ${k}`)
      .join('\n');
  return `busy ${(busy / 1e6).toFixed(2)} s of ${(total / 1e6).toFixed(2)} s sampled\n\nself time by area:\n${table(areas, 25)}\n\ntop functions:\n${table(functions, 30)}`;
}

function required(url: string | undefined): string {
  if (!url) throw new Error('BENCH_TARGET=floor needs DATABASE_URL and REDIS_URL');
  return url;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-profile-'));
  const children: ChildProcess[] = [];
  const databaseUrl = process.env.DATABASE_URL ? await createBenchDatabase(process.env.DATABASE_URL) : undefined;
  try {
    const pepper = generateSecret('admin');
    const secret = await createBenchKey({ databaseUrl, dataDir: join(dir, 'data'), pepper, name: 'profile' });
    const catalogue = writeSimCatalogue(dir, ports.sim);
    children.push(await startSimulator(ports.sim, 'profile'));
    const profiles = join(dir, 'profiles');
    const allocationFile = join(dir, 'allocations.heapprofile');
    const profiling = allocations ? ['--import', './bench/profile/allocation-sampler.mjs'] : ['--cpu-prof', `--cpu-prof-dir=${profiles}`];
    const samplerEnv: Record<string, string> = allocations ? { ALLOCATION_PROFILE_OUT: allocationFile } : {};
    const profiled =
      target === 'bare-proxy'
        ? await startBareProxy(ports.gateway, ports.sim, profiling, samplerEnv)
        : target === 'floor'
          ? await startFloorProxy(
              {
                port: ports.gateway,
                upstreamPort: ports.sim,
                level: 6,
                pepper,
                secret,
                databaseUrl: required(databaseUrl),
                redisUrl: required(process.env.REDIS_URL),
              },
              profiling,
              samplerEnv,
            )
          : await startBenchGateway({
              port: ports.gateway,
              pepper,
              catalogue,
              dataDir: join(dir, 'data'),
              storePrefix: `profile-${process.pid}:`,
              databaseUrl,
              nodeOptions: profiling,
              env: samplerEnv,
            });
    children.push(profiled);
    const result = await measureLoad(
      target,
      `http://127.0.0.1:${ports.gateway}/v1/chat/completions`,
      { authorization: `Bearer ${secret}` },
      [profiled],
      {
        duration,
        connections: 32,
        // The sampler's first file holds the warm-up; the second, sent below, the measured load.
        afterWarmup: () => allocations && profiled.kill('SIGUSR2'),
      },
    );
    console.log(
      `${result.total} requests, ${result.requestsPerSecond.toFixed(0)} req/s, ${result.cpuMicrosPerRequest?.toFixed(0)} µs CPU per request`,
    );
    if (allocations) {
      profiled.kill('SIGUSR2');
      const profile = await written<{ head: AllocationNode }>(`${allocationFile}.2`);
      console.log(`allocation profile: ${allocationFile}.2\n`);
      console.log(summariseAllocations(profile.head, result.total));
      return;
    }
    // The profile is written when the process exits normally: SIGTERM drains and exits.
    await stopProcess(profiled);
    const file = readdirSync(profiles).find((f) => f.endsWith('.cpuprofile'));
    if (!file) throw new Error('the profiled process wrote no CPU profile');
    console.log(`profile: ${join(profiles, file)}\n`);
    console.log(summarise(measuredWindow(JSON.parse(readFileSync(join(profiles, file), 'utf8')) as CpuProfile, duration), result.total));
  } finally {
    for (const child of children) child.kill('SIGKILL');
    if (databaseUrl) await dropBenchDatabase(process.env.DATABASE_URL!, databaseUrl);
    if (process.env.REDIS_URL) await deleteKeysWithPrefix(process.env.REDIS_URL, `profile-${process.pid}:`);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
