import { test } from 'vitest';
import assert from 'node:assert/strict';
import {
  ApiException,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubernetesObjectApi,
  makeInformer,
  PatchStrategy,
  setHeaderOptions,
  Watch,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { kubeForTests, skipUnlessFake, type TestKube } from '../support/fake-kube/index.js';
import { waitFor } from '../support/wait-for.js';

const group = 'gateway.svc.dev';
const version = 'v1alpha1';
const plural = 'managedkeys';
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

interface ManagedKeyObject extends KubernetesObject {
  spec: Record<string, unknown>;
  status?: Record<string, unknown>;
}

function managedKey(name: string, spec: Record<string, unknown> = { state: 'Active' }): ManagedKeyObject {
  return { apiVersion: `${group}/${version}`, kind: 'ManagedKey', metadata: { name }, spec };
}

async function withKube(run: (kube: TestKube, api: CustomObjectsApi) => Promise<void>): Promise<void> {
  const kube = await kubeForTests();
  try {
    await run(kube, kube.kubeConfig.makeApiClient(CustomObjectsApi));
  } finally {
    await kube.close();
  }
}

function statusCode(error: unknown): number | undefined {
  return error instanceof ApiException ? error.code : undefined;
}

test('create, get and list: server-owned metadata, status ignored on create, list carries its resourceVersion', () =>
  withKube(async ({ namespace }, api) => {
    const body = { ...managedKey('alpha'), status: { keyId: 'forged' } };
    const created = (await api.createNamespacedCustomObject({ group, version, namespace, plural, body })) as ManagedKeyObject;
    assert.equal(created.metadata?.generation, 1, 'a new object is generation 1');
    assert.ok(created.metadata?.uid, 'the server assigns a uid');
    assert.ok(created.metadata?.resourceVersion, 'the server assigns a resourceVersion');
    assert.equal(created.status, undefined, 'status is written only through the status subresource');
    const got = (await api.getNamespacedCustomObject({ group, version, namespace, plural, name: 'alpha' })) as ManagedKeyObject;
    assert.deepEqual(got, created, 'get returns what create stored');
    const list = (await api.listNamespacedCustomObject({ group, version, namespace, plural })) as {
      metadata: { resourceVersion: string };
      items: ManagedKeyObject[];
    };
    assert.deepEqual(
      list.items.map((i) => i.metadata?.name),
      ['alpha'],
      'the list holds the object',
    );
    assert.ok(
      Number(list.metadata.resourceVersion) >= Number(created.metadata?.resourceVersion),
      'the list is at least as new as the object',
    );
    await assert.rejects(
      api.createNamespacedCustomObject({ group, version, namespace, plural, body: managedKey('alpha') }),
      (e) => statusCode(e) === 409,
      'a taken name is AlreadyExists',
    );
    await assert.rejects(
      api.getNamespacedCustomObject({ group, version, namespace, plural, name: 'missing' }),
      (e) => statusCode(e) === 404,
      'an unknown name is NotFound',
    );
  }));

test('generation counts spec changes only; the status subresource and the main resource ignore each other', () =>
  withKube(async ({ namespace }, api) => {
    await api.createNamespacedCustomObject({ group, version, namespace, plural, body: managedKey('beta') });
    const labelled = (await api.patchNamespacedCustomObject(
      { group, version, namespace, plural, name: 'beta', body: { metadata: { labels: { team: 'a' } } } },
      mergePatch,
    )) as ManagedKeyObject;
    assert.equal(labelled.metadata?.generation, 1, 'a metadata change keeps the generation');
    const specChanged = (await api.patchNamespacedCustomObject(
      { group, version, namespace, plural, name: 'beta', body: { spec: { state: 'Suspended' }, status: { keyId: 'ignored' } } },
      mergePatch,
    )) as ManagedKeyObject;
    assert.equal(specChanged.metadata?.generation, 2, 'a spec change bumps the generation');
    assert.equal(specChanged.status, undefined, 'status is ignored on the main resource');
    const withStatus = (await api.patchNamespacedCustomObjectStatus(
      {
        group,
        version,
        namespace,
        plural,
        name: 'beta',
        body: { spec: { state: 'Active' }, status: { keyId: 'key_1', observedGeneration: 2 } },
      },
      mergePatch,
    )) as ManagedKeyObject;
    assert.deepEqual(withStatus.status, { keyId: 'key_1', observedGeneration: 2 }, 'the status subresource writes status');
    assert.equal(withStatus.spec.state, 'Suspended', 'the status subresource ignores spec');
    assert.equal(withStatus.metadata?.generation, 2, 'a status write keeps the generation');
    const again = (await api.patchNamespacedCustomObjectStatus(
      { group, version, namespace, plural, name: 'beta', body: { status: { keyId: 'key_1' } } },
      mergePatch,
    )) as ManagedKeyObject;
    assert.equal(
      again.metadata?.resourceVersion,
      withStatus.metadata?.resourceVersion,
      'a write that changes nothing keeps the resourceVersion',
    );
  }));

test('a replace with a stale resourceVersion is a 409 conflict; JSON patch applies and its failed test is refused', () =>
  withKube(async ({ namespace }, api) => {
    const created = (await api.createNamespacedCustomObject({
      group,
      version,
      namespace,
      plural,
      body: managedKey('gamma'),
    })) as ManagedKeyObject;
    const first = (await api.replaceNamespacedCustomObject({
      group,
      version,
      namespace,
      plural,
      name: 'gamma',
      body: { ...created, spec: { state: 'Active', requestsPerMinute: 5 } },
    })) as ManagedKeyObject;
    assert.equal(first.spec.requestsPerMinute, 5, 'the replace with the current version is applied');
    await assert.rejects(
      api.replaceNamespacedCustomObject({
        group,
        version,
        namespace,
        plural,
        name: 'gamma',
        body: { ...created, spec: { state: 'Suspended' } },
      }),
      (e) => statusCode(e) === 409,
      'the second replace from the same old version conflicts',
    );
    const patched = (await api.patchNamespacedCustomObject({
      group,
      version,
      namespace,
      plural,
      name: 'gamma',
      body: [
        { op: 'test', path: '/metadata/resourceVersion', value: first.metadata?.resourceVersion },
        { op: 'add', path: '/spec/allowedModels', value: ['gpt-4o-mini'] },
      ],
    })) as ManagedKeyObject;
    assert.deepEqual(patched.spec.allowedModels, ['gpt-4o-mini'], 'the JSON patch (the client default) is applied');
    await assert.rejects(
      api.patchNamespacedCustomObject({
        group,
        version,
        namespace,
        plural,
        name: 'gamma',
        body: [{ op: 'test', path: '/metadata/resourceVersion', value: first.metadata?.resourceVersion }],
      }),
      (e) => statusCode(e) === 422,
      'a failed test operation is refused',
    );
  }));

test('finalizers defer deletion; removing the last one deletes, and owned Secrets are garbage collected', () =>
  withKube(async ({ namespace, kubeConfig }, api) => {
    const core = kubeConfig.makeApiClient(CoreV1Api);
    const owner = (await api.createNamespacedCustomObject({
      group,
      version,
      namespace,
      plural,
      body: { ...managedKey('delta'), metadata: { name: 'delta', finalizers: ['gateway.svc.dev/key-cleanup'] } },
    })) as ManagedKeyObject;
    await core.createNamespacedSecret({
      namespace,
      body: {
        metadata: {
          name: 'delta-key',
          ownerReferences: [
            { apiVersion: `${group}/${version}`, kind: 'ManagedKey', name: 'delta', uid: owner.metadata!.uid!, controller: true },
          ],
        },
        stringData: { key: 'svc-sk-secret' },
      },
    });
    const secret = await core.readNamespacedSecret({ namespace, name: 'delta-key' });
    assert.equal(Buffer.from(secret.data?.key ?? '', 'base64').toString(), 'svc-sk-secret', 'stringData is stored base64 under data');
    await api.deleteNamespacedCustomObject({ group, version, namespace, plural, name: 'delta' });
    const marked = (await api.getNamespacedCustomObject({ group, version, namespace, plural, name: 'delta' })) as ManagedKeyObject;
    assert.ok(marked.metadata?.deletionTimestamp, 'with a finalizer the object is only marked for deletion');
    assert.ok(await core.readNamespacedSecret({ namespace, name: 'delta-key' }), 'the owned Secret stays while the owner exists');
    await api.patchNamespacedCustomObject(
      { group, version, namespace, plural, name: 'delta', body: { metadata: { finalizers: null } } },
      mergePatch,
    );
    await waitFor('the ManagedKey to go', async () =>
      api.getNamespacedCustomObject({ group, version, namespace, plural, name: 'delta' }).then(
        () => false,
        (e) => statusCode(e) === 404,
      ),
    );
    await waitFor('the owned Secret to be collected', async () =>
      core.readNamespacedSecret({ namespace, name: 'delta-key' }).then(
        () => false,
        (e) => statusCode(e) === 404,
      ),
    );
  }));

test('cluster-scoped RegionPolicy, Leases with optimistic concurrency, and discovery through the generic object API', () =>
  withKube(async ({ namespace, kubeConfig }, api) => {
    const name = `policy-${namespace}`;
    await api.createClusterCustomObject({
      group,
      version,
      plural: 'regionpolicies',
      body: {
        apiVersion: `${group}/${version}`,
        kind: 'RegionPolicy',
        metadata: { name },
        spec: { regions: [{ region: 'EU', allowedSuppliers: ['sim-eu'] }], failurePolicy: 'HardFail' },
      },
    });
    const policies = (await api.listClusterCustomObject({ group, version, plural: 'regionpolicies' })) as { items: KubernetesObject[] };
    assert.ok(
      policies.items.some((p) => p.metadata?.name === name),
      'the cluster-scoped policy is listed',
    );
    await api.deleteClusterCustomObject({ group, version, plural: 'regionpolicies', name });

    const leases = kubeConfig.makeApiClient(CoordinationV1Api);
    const lease = await leases.createNamespacedLease({
      namespace,
      body: { metadata: { name: 'leader' }, spec: { holderIdentity: 'a', leaseDurationSeconds: 2 } },
    });
    const renewed = await leases.replaceNamespacedLease({
      namespace,
      name: 'leader',
      body: { ...lease, spec: { ...lease.spec, holderIdentity: 'a', renewTime: new Date() } },
    });
    assert.equal(renewed.spec?.holderIdentity, 'a', 'the holder renewed');
    await assert.rejects(
      leases.replaceNamespacedLease({ namespace, name: 'leader', body: { ...lease, spec: { ...lease.spec, holderIdentity: 'b' } } }),
      (e) => statusCode(e) === 409,
      'a take-over from a stale read conflicts',
    );

    const objects = KubernetesObjectApi.makeApiClient(kubeConfig);
    const viaDiscovery = await objects.create({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'cm', namespace },
      data: { a: 'b' },
    } as KubernetesObject);
    assert.equal(viaDiscovery.metadata?.name, 'cm', 'the generic API resolves the kind through discovery');
  }));

test('a watch from a resourceVersion replays later changes; after compaction it gets 410 Gone', { skip: Boolean(skipUnlessFake()) }, () =>
  withKube(async ({ namespace, kubeConfig, fake }, api) => {
    const created = (await api.createNamespacedCustomObject({
      group,
      version,
      namespace,
      plural,
      body: managedKey('eps'),
    })) as ManagedKeyObject;
    await api.patchNamespacedCustomObject(
      { group, version, namespace, plural, name: 'eps', body: { spec: { state: 'Suspended' } } },
      mergePatch,
    );
    await api.deleteNamespacedCustomObject({ group, version, namespace, plural, name: 'eps' });
    const path = `/apis/${group}/${version}/namespaces/${namespace}/${plural}`;
    const events: string[] = [];
    const controller = await new Watch(kubeConfig).watch(
      path,
      { resourceVersion: created.metadata!.resourceVersion },
      (type) => events.push(type),
      () => undefined,
    );
    await waitFor('the replayed events', () => events.length >= 2);
    controller.abort();
    assert.deepEqual(events, ['MODIFIED', 'DELETED'], 'changes after the version are replayed in order');

    fake!.compact();
    const errors: { type: string; code: unknown }[] = [];
    let ended = false;
    await new Watch(kubeConfig).watch(
      path,
      { resourceVersion: created.metadata!.resourceVersion },
      (type, object: { code?: number }) => errors.push({ type, code: object.code }),
      () => {
        ended = true;
      },
    );
    await waitFor('the watch to end', () => ended);
    assert.deepEqual(errors, [{ type: 'ERROR', code: 410 }], 'a compacted version is Gone, as an ERROR event');
  }),
);

test(
  'an informer resumes after dropped watches and relists after 410 without missing a change; injected 500s fail requests',
  { skip: Boolean(skipUnlessFake()) },
  () =>
    withKube(async ({ namespace, kubeConfig, fake }, api) => {
      const informer = makeInformer<ManagedKeyObject>(
        kubeConfig,
        `/apis/${group}/${version}/namespaces/${namespace}/${plural}`,
        () => api.listNamespacedCustomObject({ group, version, namespace, plural }) as never,
      );
      const errors: unknown[] = [];
      informer.on('error', (e) => errors.push(e));
      await informer.start();
      const state = () =>
        informer
          .list()
          .map((o) => `${o.metadata?.name}:${String(o.spec.state)}`)
          .sort()
          .join(',');
      await api.createNamespacedCustomObject({ group, version, namespace, plural, body: managedKey('one') });
      await waitFor('the informer to see the first object', () => state() === 'one:Active');

      assert.ok(fake!.dropWatches('end') >= 1, 'an open watch was dropped');
      await api.createNamespacedCustomObject({ group, version, namespace, plural, body: managedKey('two') });
      await waitFor('the informer to resume and see the second object', () => state() === 'one:Active,two:Active');

      // Changes while no watch is open, then compaction: the resume gets 410 and must relist.
      // The store is changed in-process, synchronously, so the client cannot reconnect in between.
      await waitFor('the watch to reopen', () => fake!.openWatches >= 1);
      const listsBefore = fake!.requests('list', plural);
      const type = fake!.store.typeFor(group, plural)!;
      fake!.dropWatches('end');
      fake!.store.update(type, namespace, 'one', 'main', (o) => ({ ...o, spec: { ...(o.spec as object), state: 'Suspended' } }));
      fake!.store.delete(type, namespace, 'two');
      fake!.compact();
      await waitFor('the informer to relist after 410', () => state() === 'one:Suspended');
      assert.ok(fake!.requests('list', plural) > listsBefore, 'the informer relisted');
      assert.deepEqual(errors, [], 'no error reached the informer');

      fake!.failNext(plural, 2, 500, 'get');
      await assert.rejects(
        api.getNamespacedCustomObject({ group, version, namespace, plural, name: 'one' }),
        (e) => statusCode(e) === 500,
        'the first injected failure',
      );
      await assert.rejects(
        api.getNamespacedCustomObject({ group, version, namespace, plural, name: 'one' }),
        (e) => statusCode(e) === 500,
        'the second injected failure',
      );
      assert.ok(
        await api.getNamespacedCustomObject({ group, version, namespace, plural, name: 'one' }),
        'requests succeed again after the injected failures',
      );

      fake!.dropWatches('reset');
      await waitFor('the reset to reach the informer as an error', () => errors.length > 0);
      await informer.stop();
    }),
);
