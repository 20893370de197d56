import { afterAll, beforeAll, describe, test } from 'vitest';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { once } from 'node:events';
import { openDatabase } from '../../core/db/index.js';
import { generateSecret, KeyRepository } from '../../core/keys/index.js';
import { deleteKeysWithPrefix } from '../../core/store/testing.js';
import { startSimulator, type RunningSimulator } from '../simulator/server.js';

const root = resolve(import.meta.dirname, '../..');

/** Runs `npm run gateway`'s entry point with only environment configuration, as Kubernetes does. */
function spawnGateway(env: Record<string, string>): { child: ChildProcess; output: () => string } {
  const child = spawn(process.execPath, ['--import', 'tsx', 'gateway/src/main.ts'], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  return { child, output: () => output };
}

async function waitFor(check: () => boolean, what: string, ms = 30_000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('the gateway process (npm run gateway)', () => {
  let sim: RunningSimulator;
  let dir: string;
  let catalogue: string;
  const baseEnv = () => ({
    SVC_ADMIN_KEY: generateSecret('admin'),
    SVC_KEY_PEPPER: generateSecret('admin'),
    SVC_CATALOG: catalogue,
    SVC_DATA_DIR: join(dir, 'data'),
    SVC_HOST: '127.0.0.1',
    SVC_METRICS_PORT: '0',
    LOG_LEVEL: 'warn',
    ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL, SVC_STORE_PREFIX: `proc-test-${process.pid}:` } : {}),
  });

  beforeAll(async () => {
    sim = await startSimulator({ name: 'proc-sim' });
    dir = mkdtempSync(join(tmpdir(), 'svc-proc-'));
    catalogue = join(dir, 'catalog.yaml');
    writeFileSync(
      catalogue,
      `suppliers:\n  - name: sim-eu\n    protocol: openai\n    base_url: ${sim.url}/v1\n    region: EU\n    models:\n      - id: gpt-4o-mini\n        input_usd_per_mtok: 0.15\n        output_usd_per_mtok: 0.6\n`,
    );
  });
  afterAll(async () => {
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
    if (process.env.REDIS_URL) await deleteKeysWithPrefix(process.env.REDIS_URL, `proc-test-${process.pid}:`);
  });

  test('a bad catalogue stops start-up with a message naming the field', async () => {
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, 'suppliers:\n  - name: x\n    protocol: carrier-pigeon\n    base_url: http://127.0.0.1:1/v1\n    region: EU\n    models: []\n');
    const { child, output } = spawnGateway({ ...baseEnv(), SVC_CATALOG: bad, PORT: '0' });
    const [code] = (await once(child, 'exit')) as [number];
    assert.equal(code, 1);
    assert.match(output(), /configuration error: invalid catalogue .*bad\.yaml/);
    assert.match(output(), /suppliers\[0\]\.protocol/);
    assert.match(output(), /suppliers\[0\]\.models/);
  });

  test('a missing admin key stops start-up naming SVC_ADMIN_KEY', async () => {
    const env: Record<string, string> = { ...baseEnv(), PORT: '0' };
    delete env.SVC_ADMIN_KEY;
    const { child, output } = spawnGateway(env);
    const [code] = (await once(child, 'exit')) as [number];
    assert.equal(code, 1);
    assert.match(output(), /SVC_ADMIN_KEY/);
  });

  test('SIGTERM: stops accepting, finishes the request in flight, exits 0', async () => {
    const env = { ...baseEnv(), PORT: String(20_000 + Math.floor(Math.random() * 20_000)) };
    // The key is created in the gateway's own embedded database before it starts.
    const db = await openDatabase({ kind: 'embedded', dataDir: env.SVC_DATA_DIR });
    await db.migrate();
    const { secret } = await new KeyRepository(db.knex, env.SVC_KEY_PEPPER).create({ kind: 'managed', name: 'drain', source: 'api' });
    await db.close();

    const { child, output } = spawnGateway(env);
    try {
      await waitFor(() => output().includes('gateway listening on'), 'the gateway to listen');
      const base = `http://127.0.0.1:${env.PORT}`;
      assert.equal((await fetch(`${base}/health`)).status, 200);
      sim.setFaults({ latencyMs: 1_500 }); // the supplier takes 1.5 s; SIGTERM arrives meanwhile
      const inFlight = fetch(`${base}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'slow one' }] }),
      });
      await waitFor(() => sim.requests.some((r) => JSON.stringify(r.body).includes('slow one')), 'the supplier to receive the call');
      child.kill('SIGTERM');
      const response = await inFlight;
      assert.equal(response.status, 200, 'the request in flight completes');
      assert.equal(((await response.json()) as { object: string }).object, 'chat.completion');
      const [code] = (await once(child, 'exit')) as [number];
      assert.equal(code, 0, output());
      assert.match(output(), /SIGTERM: draining/);
      await assert.rejects(fetch(`${base}/health`), 'no longer accepting connections');
    } finally {
      sim.setFaults(undefined);
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});
