// The gateway process as Kubernetes runs it (gateway/src/main.ts, configured by environment
// only): /metrics on SVC_METRICS_PORT, tracing switched on by the standard OTEL_* variables
// (the console exporter, so the spans land in the process output), the request's log line
// carrying the trace id that the supplier also received.
import { afterAll, beforeAll, describe, test } from 'vitest';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { openDatabase } from '../../core/db/index.js';
import { seedEmbeddedDataDir } from '../../core/db/testing.js';
import { generateSecret, KeyRepository } from '../../core/keys/index.js';
import { deleteKeysWithPrefix } from '../../core/store/testing.js';
import { startSimulator, type RunningSimulator } from '../simulator/server.js';
import { freePort } from '../support/free-port.js';
import { waitFor } from '../support/wait-for.js';
import { scrape } from './scrape.js';

const root = resolve(import.meta.dirname, '../..');
const storePrefix = `proc-telemetry-${process.pid}:`;

describe('gateway process telemetry', () => {
  let sim: RunningSimulator;
  let dir: string;
  let child: ChildProcess;
  let output = '';
  let secret: string;
  let port: number;
  let metricsPort: number;

  beforeAll(async () => {
    metricsPort = await freePort();
    sim = await startSimulator({ name: 'proc-telemetry-sim' });
    dir = mkdtempSync(join(tmpdir(), 'svc-proc-telemetry-'));
    const catalogue = join(dir, 'catalog.yaml');
    writeFileSync(
      catalogue,
      `suppliers:\n  - name: sim-eu\n    protocol: openai\n    base_url: ${sim.url}/v1\n    region: EU\n    models:\n      - id: gpt-4o-mini\n        input_usd_per_mtok: 0.15\n        output_usd_per_mtok: 0.6\n`,
    );
    const pepper = generateSecret('admin');
    await seedEmbeddedDataDir(join(dir, 'data')); // the migrated snapshot: no initdb, no migrations
    const db = await openDatabase({ kind: 'embedded', dataDir: join(dir, 'data') });
    secret = (await new KeyRepository(db.knex, pepper).create({ kind: 'managed', name: 'telemetry', source: 'api' })).secret;
    await db.close();
    child = spawn(process.execPath, ['--import', 'tsx', 'gateway/src/main.ts'], {
      cwd: root,
      env: {
        PATH: process.env.PATH ?? '',
        SVC_ADMIN_KEY: generateSecret('admin'),
        SVC_KEY_PEPPER: pepper,
        SVC_CATALOG: catalogue,
        SVC_DATA_DIR: join(dir, 'data'),
        SVC_HOST: '127.0.0.1',
        PORT: '0',
        SVC_METRICS_PORT: String(metricsPort),
        LOG_LEVEL: 'info',
        OTEL_TRACES_EXPORTER: 'console',
        OTEL_SERVICE_NAME: 'svc-gateway-process-test',
        ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL, SVC_STORE_PREFIX: storePrefix } : {}),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    await waitFor('the gateway to listen', () => output.includes('gateway listening on') || child.exitCode !== null, 60_000);
    assert.ok(child.exitCode === null, `the gateway started:\n${output}`);
    port = Number(/gateway listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(output)?.[1]);
    assert.ok(port > 0, `the gateway reported its port:\n${output}`);
  });
  afterAll(async () => {
    if (child?.exitCode === null) {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
    await sim?.close();
    rmSync(dir, { recursive: true, force: true });
    if (process.env.REDIS_URL) await deleteKeysWithPrefix(process.env.REDIS_URL, storePrefix);
  });

  test('metrics on their own port, spans on the console exporter, the trace id in the log and at the supplier', async () => {
    assert.match(
      output,
      /metrics: http:\/\/127\.0\.0\.1:\d+\/metrics; audit writer: (inline|thread); tracing: OTEL_TRACES_EXPORTER=console/,
      'start-up names metrics and tracing',
    );
    const response = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }], max_tokens: 10 }),
    });
    assert.equal(response.status, 200, 'answered');
    await response.text();

    const metrics = await scrape(`http://127.0.0.1:${metricsPort}/metrics`);
    assert.equal(
      metrics.sum('svc_gateway_requests_total', { interface: 'chat.completions', supplier: 'sim-eu', status: '200' }),
      1,
      'the request is counted',
    );
    assert.ok(metrics.matching('process_cpu_seconds_total').length === 1, 'process metrics are exposed');

    // Shutdown flushes the span processor, so every span is printed by the time it exits.
    child.kill('SIGTERM');
    const [code] = (await once(child, 'exit')) as [number | null];
    assert.equal(code, 0, `clean shutdown:\n${output.slice(-2000)}`);
    const line = output
      .split('\n')
      .filter((l) => l.startsWith('{"'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.msg === 'request' && l.path === '/v1/chat/completions');
    const traceId = String(line?.trace_id);
    assert.match(traceId, /^[0-9a-f]{32}$/, 'the request line carries a trace id');
    assert.ok(output.includes(`traceId: '${traceId}'`), 'the exporter printed spans of that trace');
    assert.ok(
      output.includes("name: 'chat gpt-4o-mini'") && output.includes("'gen_ai.provider.name': 'openai'"),
      'including the supplier attempt',
    );
    assert.ok(output.includes("'service.name': 'svc-gateway-process-test'"), 'named by OTEL_SERVICE_NAME');
    assert.match(
      sim.requests.at(-1)?.headers.traceparent ?? '',
      new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`),
      'the supplier received the trace',
    );
  });
});
