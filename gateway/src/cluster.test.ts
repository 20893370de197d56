// The SVC_WORKERS primary in this process, over stand-in workers (cluster-worker.fixture.ts):
// every worker listens before it resolves, requests spread over them, a dead worker is
// replaced, /metrics sums the live workers, and stop() drains them all. The real gateway as
// a cluster runs in test/gateway/process.test.ts.
import assert from 'node:assert/strict';
import cluster from 'node:cluster';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, test } from 'vitest';
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
  beforeAll(() => {
    cluster.setupPrimary({
      exec: fileURLToPath(new URL('./cluster-worker.fixture.ts', import.meta.url)),
      execArgv: ['--import', 'tsx'],
      silent: true,
    });
  });
  afterAll(async () => {
    await primary?.stop();
  });

  test('forks, spreads, replaces, sums metrics and drains', async () => {
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

  test('connections arriving just after a worker dies are answered by the other, none is held', async () => {
    // With node:cluster's round robin the primary passed some of these to the dead worker and
    // held them unanswered (2 of 3 runs of the same sequence on a bare cluster).
    // (Unless Node's NODE_CLUSTER_SCHED_POLICY chose otherwise for this run.)
    if (process.env.NODE_CLUSTER_SCHED_POLICY === undefined)
      assert.equal(cluster.schedulingPolicy, cluster.SCHED_NONE, 'workers accept for themselves');
    process.env.FIXTURE_PORT = String(await freePort());
    primary = await runClusterPrimary(settingsWith({ SVC_HOST: '127.0.0.1', SVC_METRICS_PORT: '0' }), 2);
    const live = () => Object.values(cluster.workers ?? {}).filter((w) => w && !w.isDead());
    const [victim, survivor] = live();
    // Ten connections in the same tick as the kill, arriving before the primary has heard that the
    // worker died (round robin passed some of them to it).
    victim!.process.kill('SIGKILL');
    const answers = await Promise.all(
      Array.from({ length: 10 }, async (_, i) => {
        const held = new Error(`connection ${i}, opened as the worker died, was held without an answer`);
        const ask = async () => {
          let timer: NodeJS.Timeout | undefined;
          const deadline = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(held), 5_000)));
          const answer = fetch(primary!.url, { headers: { connection: 'close' } }).then((r) => r.text());
          return Promise.race([answer, deadline]).finally(() => clearTimeout(timer));
        };
        // A connection the dying worker had just accepted may be reset: the client can retry it.
        return (await ask().catch((error: Error) => (error === held ? Promise.reject(held) : ask()))).trim();
      }),
    );
    assert.ok(answers.includes(String(survivor!.process.pid)), `answered by the surviving worker: ${answers.join(', ')}`);
    assert.ok(!answers.includes(String(victim!.process.pid)), 'not by the dead one');
    // The answers can all come before the primary hears of the death; stop() would count the
    // victim as a worker that did not drain.
    await waitFor('the primary to see the worker die', () => victim!.isDead());
    assert.equal(await primary.stop(), true);
    primary = undefined;
  });
});
