// Telemetry benchmark (not a test): the gateway under the same load with its trace exporter
// off (the default: no OTEL_* configured) and on (OTLP to a stand-in collector), in alternating
// rounds so drift on the shared machine hits both modes alike. Prints requests/s, latency,
// the gateway's CPU per request and what the exporter delivered, and rewrites its own section
// of bench/RESULTS.md. Every server is its own process; the load generator runs in this one.
//
//   npm run bench:telemetry       (BENCH_DURATION=8 BENCH_CONNECTIONS=32 BENCH_ROUNDS=2 to change the load)
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { openDatabase } from '../../core/db/index.js';
import { generateSecret, KeyRepository } from '../../core/keys/index.js';
import { deleteKeysWithPrefix } from '../../core/store/testing.js';
import { writeSimCatalogue } from '../shared/catalogue.js';
import { measureLoad } from '../shared/load.js';
import { startBenchGateway, startProcess, startSimulator, stopProcess } from '../shared/start-process.js';
import { writeSection } from '../streaming/results.js';
import { renderTelemetrySection, type TelemetryRun } from './results.js';

const root = resolve(import.meta.dirname, '../..');
const duration = Number(process.env.BENCH_DURATION ?? 8);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
const rounds = Number(process.env.BENCH_ROUNDS ?? 2);
const ports = { sim: 18_190, gateway: 18_180, sink: 18_318 };

/** The gateway's environment per mode; "off" is the default deployment (nothing configured). */
const modeEnv: Record<TelemetryRun['mode'], Record<string, string>> = {
  off: {},
  on: {
    OTEL_TRACES_EXPORTER: 'otlp',
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${ports.sink}`,
    OTEL_SERVICE_NAME: 'svc-gateway-bench',
  },
};

async function sinkStats(): Promise<{ exports: number; bytes: number }> {
  const response = await fetch(`http://127.0.0.1:${ports.sink}/stats`);
  return (await response.json()) as { exports: number; bytes: number };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-telemetry-'));
  const children: ChildProcess[] = [];
  const storePrefix = `bench-telemetry-${process.pid}:`;
  try {
    const pepper = generateSecret('admin');
    const dataDir = join(dir, 'data');
    const db = await openDatabase({ kind: 'embedded', dataDir });
    await db.migrate();
    const { secret } = await new KeyRepository(db.knex, pepper).create({ kind: 'managed', name: 'bench', source: 'api' });
    await db.close();
    const catalogue = writeSimCatalogue(dir, ports.sim);
    children.push(await startSimulator(ports.sim, 'bench'));
    children.push(await startProcess('otlp sink', ['bench/telemetry/otlp-sink.mjs'], { PORT: String(ports.sink) }, /listening/));

    const runs: TelemetryRun[] = [];
    for (let round = 1; round <= rounds; round++) {
      for (const mode of ['off', 'on'] as const) {
        const gateway = await startBenchGateway({ port: ports.gateway, pepper, catalogue, dataDir, storePrefix, env: modeEnv[mode] });
        try {
          const before = await sinkStats();
          const measured = await measureLoad(
            `tracing ${mode}, round ${round}`,
            `http://127.0.0.1:${ports.gateway}/v1/chat/completions`,
            { authorization: `Bearer ${secret}` },
            [gateway],
            {
              duration,
              connections,
            },
          );
          await stopProcess(gateway); // shutdown flushes the last batch of spans
          const after = await sinkStats();
          runs.push({ ...measured, mode, exports: after.exports - before.exports, exportBytes: after.bytes - before.bytes });
        } finally {
          await stopProcess(gateway);
        }
      }
    }
    const markdown = renderTelemetrySection(runs, {
      date: new Date().toISOString().slice(0, 10),
      machine: `${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`,
      store: `embedded PGlite (inside the gateway process), ${process.env.REDIS_URL ? 'Redis' : 'in-process store'}`,
      duration,
      connections,
      rounds,
    });
    console.log(markdown);
    writeSection(join(root, 'bench/RESULTS.md'), 'telemetry', markdown, '## Telemetry');
  } finally {
    for (const child of children) await stopProcess(child);
    if (process.env.REDIS_URL)
      await deleteKeysWithPrefix(process.env.REDIS_URL, storePrefix).catch((e: unknown) => console.warn('cleanup failed', e));
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
