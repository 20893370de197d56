// Leader election, failover and informer recovery of the operator, against the fake Kubernetes
// API's fault injection (skipped on a real cluster), with real or embedded PostgreSQL and Redis.
import { afterAll, beforeAll, describe, test } from 'vitest';
import assert from 'node:assert/strict';
import { CoordinationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { KeyRepository } from '../../core/keys/index.js';
import { LeaderElector } from '../../operator/src/kube/leader-election.js';
import { skipUnlessFake } from '../support/fake-kube/index.js';
import { conditionOf, startOperatorTestbed, type OperatorTestbed } from '../support/operator-testbed.js';
import { startTcpProxy } from '../support/tcp-proxy.js';
import { waitFor } from '../support/wait-for.js';

describe('operator resilience', { skip: Boolean(skipUnlessFake()) }, () => {
  let bed: OperatorTestbed;

  beforeAll(async () => {
    bed = await startOperatorTestbed();
  });
  afterAll(async () => {
    await bed.close();
  });

  // Injected failures hit the test's own reads too: a failed read is "not yet".
  const ready = async (name: string) => conditionOf(await bed.readManagedKey(name).catch(() => undefined), 'Ready')?.status === 'True';
  const holder = async (lease = 'svc-gateway-operator') =>
    (await bed.kube.kubeConfig.makeApiClient(CoordinationV1Api).readNamespacedLease({ namespace: bed.kube.namespace, name: lease })).spec
      ?.holderIdentity;

  test('two operators: one leader; a cut-off leader steps down and the other takes over; a clean stop hands over', async () => {
    const proxy = await startTcpProxy(Number(new URL(bed.kube.fake!.url).port));
    const a = await bed.startOperator('op-a', {}, bed.kube.fake!.kubeConfig(bed.kube.namespace, proxy.url));
    await waitFor('op-a to lead', () => a.isLeader);
    const b = await bed.startOperator('op-b');
    // Several renewal rounds pass (seen in the Lease's renewTime); the follower must stay a follower throughout.
    let followerLed = 0;
    const sampler = setInterval(() => {
      if (b.isLeader) followerLed++;
    }, 5);
    const renewals = new Set<string>();
    try {
      await waitFor('op-a to renew the Lease three times beside op-b', async () => {
        const lease = await bed.kube.kubeConfig
          .makeApiClient(CoordinationV1Api)
          .readNamespacedLease({ namespace: bed.kube.namespace, name: 'svc-gateway-operator' });
        renewals.add(String(lease.spec?.renewTime));
        return renewals.size > 3;
      });
    } finally {
      clearInterval(sampler);
    }
    assert.equal(followerLed, 0, 'the follower never led');
    assert.deepEqual([a.isLeader, b.isLeader], [true, false], 'exactly one leader: the first');
    assert.equal(await holder(), 'op-a', 'the Lease names the leader');
    await bed.applyManagedKey('first', { state: 'Active' });
    await waitFor('the leader to reconcile', () => ready('first'));

    // op-a loses the API: it cannot renew, steps down, and op-b takes the Lease once it expires.
    await proxy.cut();
    await waitFor('op-a to step down', () => !a.isLeader);
    await waitFor('op-b to take over', () => b.isLeader);
    assert.equal(await holder(), 'op-b', 'the Lease names the new leader');
    assert.equal(a.isLeader && b.isLeader, false, 'never two leaders');
    await bed.applyManagedKey('second', { state: 'Active' });
    await waitFor('the new leader to reconcile', () => ready('second'));

    const metrics = await (await fetch(b.metricsUrl!)).text();
    assert.match(metrics, /^svc_operator_leader 1$/m, 'the leader gauge is 1 on the leader');
    assert.match(
      metrics,
      /^svc_operator_reconciles_total\{kind="ManagedKey",result="success"\} [1-9]/m,
      'reconciles are counted by kind and result',
    );
    assert.equal((await fetch(b.metricsUrl!.replace('/metrics', '/health'))).status, 200, '/health answers beside /metrics');

    // A clean stop releases the Lease: the next replica need not wait for it to expire.
    await b.stop();
    assert.equal(await holder(), undefined, 'the stopped leader released the Lease');
    const c = await bed.startOperator('op-c');
    await waitFor('op-c to lead', () => c.isLeader);
    await a.stop();
  });

  test('the elector alone: a leader whose Lease requests hang steps down by its renew deadline, never two leaders; stop() returns', async () => {
    // No request timeout under the elector here: only its own bound on a round can save it.
    const proxy = await startTcpProxy(Number(new URL(bed.kube.fake!.url).port));
    const elector = (identity: string, kubeConfig: KubeConfig) =>
      new LeaderElector(
        kubeConfig.makeApiClient(CoordinationV1Api),
        {
          namespace: bed.kube.namespace,
          leaseName: 'elector-test',
          identity,
          leaseDurationMs: 1500,
          renewDeadlineMs: 1000,
          retryPeriodMs: 200,
          logger: pino({ level: 'silent' }),
        },
        { onStartedLeading: () => undefined, onStoppedLeading: () => undefined },
      );
    const a = elector('el-a', bed.kube.fake!.kubeConfig(bed.kube.namespace, proxy.url));
    const b = elector('el-b', bed.kube.kubeConfig);
    let bothLeading = 0;
    let newLeaderSamples = 0;
    const sampler = setInterval(() => {
      if (a.isLeader && b.isLeader) bothLeading++;
      if (b.isLeader) newLeaderSamples++;
    }, 5);
    try {
      a.start();
      await waitFor('el-a to lead', () => a.isLeader);
      b.start();
      proxy.blackHole();
      await waitFor('el-b to take over', () => b.isLeader);
      await waitFor('more samples with the new leader', () => newLeaderSamples >= 20);
      assert.equal(bothLeading, 0, 'never two leaders at once');
      assert.equal(a.isLeader, false, 'the cut-off leader stepped down');
      await a.stop(); // returns although its requests hang
    } finally {
      clearInterval(sampler);
      await proxy.close();
    }
    await b.stop();
    assert.equal(await holder('elector-test'), undefined, 'the stopped leader released the Lease');
  });

  test('an operator whose requests hang (black-holed network) steps down, never two leaders; its stop() returns though reconciles were in flight', async () => {
    const settings = { SVC_LEASE_NAME: 'black-hole-test' };
    const proxy = await startTcpProxy(Number(new URL(bed.kube.fake!.url).port));
    // Frequent resyncs: a's reconciles are in flight, and hang, when its network goes.
    const a = await bed.startOperator(
      'bh-a',
      { ...settings, SVC_OPERATOR_RESYNC_MS: '100' },
      bed.kube.fake!.kubeConfig(bed.kube.namespace, proxy.url),
    );
    await waitFor('bh-a to lead', () => a.isLeader);
    await bed.applyManagedKey('black-holed', {});
    await waitFor('bh-a to reconcile', () => ready('black-holed'));
    const b = await bed.startOperator('bh-b', settings);
    // Sampled throughout: with a's renewals hanging rather than failing, only the renew
    // deadline (shorter than the lease duration b waits out) keeps the two apart.
    let bothLeading = 0;
    let newLeaderSamples = 0;
    const sampler = setInterval(() => {
      if (a.isLeader && b.isLeader) bothLeading++;
      if (b.isLeader) newLeaderSamples++;
    }, 5);
    try {
      proxy.blackHole();
      await waitFor('bh-b to take over', () => b.isLeader);
      await waitFor('more samples with the new leader', () => newLeaderSamples >= 20);
      assert.equal(bothLeading, 0, 'never two leaders at once');
      assert.equal(a.isLeader, false, 'the cut-off leader stepped down');
      assert.equal(await holder('black-hole-test'), 'bh-b', 'the Lease names the new leader');
      await a.stop(); // returns although every request it makes hangs
    } finally {
      clearInterval(sampler);
      await proxy.close();
    }
    await b.stop();
  });

  test('dropped watches, failing requests and a 410 after compaction: no change is missed', async () => {
    // A long resync, so only the informer's own recovery can notice the changes below.
    const operator = await bed.startOperator('op-watch', { SVC_OPERATOR_RESYNC_MS: '600000', SVC_LEASE_NAME: 'watch-test' });
    await waitFor('the operator to lead', () => operator.isLeader);
    await bed.applyManagedKey('watched', { requestsPerMinute: 1 });
    await waitFor('the first key to be ready', () => ready('watched'));
    const fake = bed.kube.fake!;
    const type = fake.store.typeFor('gateway.svc.dev', 'managedkeys')!;
    await waitFor('the watch to be open', () => fake.openWatches > 0);

    // Cut the watch, change things while it is down (synchronously, before any reconnect),
    // compact the history so the resume gets 410, and fail the relists that follow.
    fake.dropWatches('reset');
    fake.store.update(type, bed.kube.namespace, 'watched', 'main', (o) => ({ ...o, spec: { requestsPerMinute: 7 } }));
    fake.store.create(type, bed.kube.namespace, {
      apiVersion: 'gateway.svc.dev/v1alpha1',
      kind: 'ManagedKey',
      metadata: { name: 'added-while-down' },
      spec: {},
    });
    fake.compact();
    fake.failNext('managedkeys', 3, 500, 'list');

    await waitFor('the key created while the watch was down to be ready', () => ready('added-while-down'));
    const keys = new KeyRepository(bed.gateway.database.knex, bed.gateway.pepper);
    const watched = await bed.readManagedKey('watched').catch(() => bed.readManagedKey('watched'));
    await waitFor(
      'the change made while the watch was down to reach the row',
      async () => (await keys.findById(watched?.status?.keyId ?? ''))?.rateLimitRpm === 7,
    );
    const restarts = (await operator.metrics.informerRestarts.get()).values.find((v) => v.labels.kind === 'ManagedKey')?.value ?? 0;
    assert.ok(restarts >= 1, 'the informer was restarted by its supervisor');
    await operator.stop();
  });
});
