// Starts the two servers of the streaming benchmark as child processes, configured the way
// bench/overhead/run.ts does it: the supplier simulator, and the gateway over an embedded
// PostgreSQL data dir in which the benchmark key was created first.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { openDatabase } from '../../core/db/index.js';
import { generateSecret, KeyRepository } from '../../core/keys/index.js';
import { startBenchGateway, startSimulator } from '../shared/start-process.js';

export const root = resolve(import.meta.dirname, '../..');

/** Model id served by the simulator through the gateway (openai protocol). */
export const benchModel = 'gpt-4o-mini';

/** The running pair of servers. */
export interface BenchServers {
  simUrl: string;
  gatewayUrl: string;
  /** A managed key of the gateway. */
  secret: string;
  stop(): void;
}

/** Starts the simulator and the gateway (ports from the arguments); stop() kills both and removes the data dir. */
export async function startServers(ports: { sim: number; gateway: number }, simLatencyMs: number): Promise<BenchServers> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-stream-'));
  const children: ChildProcess[] = [];
  const stop = () => {
    for (const child of children) child.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const pepper = generateSecret('admin');
    const db = await openDatabase({ kind: 'embedded', dataDir: join(dir, 'data') });
    await db.migrate();
    const { secret } = await new KeyRepository(db.knex, pepper).create({ kind: 'managed', name: 'bench-streaming', source: 'api' });
    await db.close();
    const catalogue = join(dir, 'catalog.yaml');
    writeFileSync(
      catalogue,
      `suppliers:\n  - name: sim\n    protocol: openai\n    base_url: http://127.0.0.1:${ports.sim}/v1\n    region: EU\n    models:\n      - id: ${benchModel}\n        input_usd_per_mtok: 0.15\n        output_usd_per_mtok: 0.6\n`,
    );
    children.push(await startSimulator(ports.sim, 'bench-streaming', simLatencyMs > 0 ? { SIM_LATENCY_MS: String(simLatencyMs) } : {}));
    children.push(
      await startBenchGateway({ port: ports.gateway, pepper, catalogue, dataDir: join(dir, 'data'), storePrefix: 'bench-streaming:' }),
    );
    return { simUrl: `http://127.0.0.1:${ports.sim}`, gatewayUrl: `http://127.0.0.1:${ports.gateway}`, secret, stop };
  } catch (error) {
    stop();
    throw error;
  }
}
