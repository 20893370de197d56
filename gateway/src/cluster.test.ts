// The SVC_WORKERS primary in this process, over stand-in workers (cluster-worker.fixture.ts):
// every worker listens before it resolves, requests spread over them, a dead worker is
// replaced, /metrics sums the live workers, and stop() drains them all. The real gateway as
// a cluster runs in test/gateway/process.test.ts.
import assert from 'node:assert/strict';
import cluster from 'node:cluster';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, test } from 'vitest';
import { parseSettings } from '../../core/config/index.js';
import { freePort } from '../../test/support/free-port.js';
import { waitFor } from '../../test/support/wait-for.js';
import { runClusterPrimary, workerCount, type ClusterPrimary } from './cluster.js';

const settingsWith = (extra: Record<string, string>) =>
  parseSettings({ SVC_ADMIN_KEY: `svc-admin-${'a'.repeat(40)}`, SVC_KEY_PEPPER: 'p'.repeat(40), SVC_CATALOG: 'x', ...extra });

describe('workerCount', () => {
  test('a number as given, auto as one per core only where state is shared, and refusals without it', () => {
    const shared = { REDIS_URL: 'redis://127.0.0.1:6379', DATABASE_URL: 'postgres://x@127.0.0.1/db' };
    assert.equal(workerCount(settingsWith({ ...shared, SVC_WORKERS: '3' })), 3);
    assert.ok(workerCount(settingsWith({ ...shared, SVC_WORKERS: 'auto' })) >= 1);
    assert.equal(workerCount(settingsWith({ SVC_WORKERS: 'auto' })), 1, 'embedded defaults: one process');
    assert.equal(workerCount(settingsWith({})), 1, 'default: one process');
    assert.throws(() => workerCount(settingsWith({ SVC_WORKERS: '2' })), /needs REDIS_URL and DATABASE_URL/);
    assert.throws(() => settingsWith({ SVC_WORKERS: '0' }), /SVC_WORKERS/);
  });
});

describe('runClusterPrimary', () => {
  let primary: ClusterPrimary | undefined;
  afterAll(async () => {
    await primary?.stop();
  });

  test('forks, spreads, replaces, sums metrics and drains', async () => {
    cluster.setupPrimary({
      exec: fileURLToPath(new URL('./cluster-worker.fixture.ts', import.meta.url)),
      execArgv: ['--import', 'tsx'],
      silent: true,
    });
    process.env.FIXTURE_PORT = String(await freePort());
    const metricsPort = await freePort();
    primary = await runClusterPrimary(settingsWith({ SVC_HOST: '127.0.0.1', SVC_METRICS_PORT: String(metricsPort) }), 2);
    assert.equal(primary.workers, 2);
    const live = () => Object.values(cluster.workers ?? {}).filter((w) => w && !w.isDead());
    assert.equal(live().length, 2);

    const pidOfAnswer = async () => (await (await fetch(primary!.url, { headers: { connection: 'close' } })).text()).trim();
    const seen = new Set<string>();
    await waitFor('requests answered by both workers', async () => {
      seen.add(await pidOfAnswer());
      return seen.size === 2;
    });

    const started = async () => {
      const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      return Number(/^fixture_worker_starts_total (\d+)/m.exec(text)?.[1] ?? NaN);
    };
    await waitFor('both workers in the metrics', async () => (await started()) === 2);

    const victim = live()[0]!;
    const victimPid = victim.process.pid;
    victim.process.kill('SIGKILL');
    await waitFor('a replacement worker', () => live().length === 2 && live().every((w) => w!.process.pid !== victimPid));
    await waitFor('the metrics of the live workers only', async () => (await started()) === 2);
    assert.equal((await fetch(`http://127.0.0.1:${metricsPort}/health`)).status, 200);

    assert.equal(await primary.stop(), true, 'every worker drained and exited cleanly');
    assert.equal(live().length, 0);
    await assert.rejects(fetch(`http://127.0.0.1:${metricsPort}/metrics`), 'the metrics port is closed');
  });
});
