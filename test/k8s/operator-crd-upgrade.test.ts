// CRD lifecycle (issue 21): Helm never upgrades a chart's crds/, so the operator applies its
// bundled CRDs at start (SVC_OPERATOR_APPLY_CRDS, chart value operator.manageCRDs) with
// server-side apply. On the fake API server, which validates custom objects against the stored
// CRD: an older schema in the cluster refuses a ManagedKey that the bundled schema accepts;
// after an operator of this release starts, the cluster's schema is the bundled one and the same
// ManagedKey is accepted and reconciled. A newer schema is never downgraded, and a CRD that
// would stop serving a stored version is refused.
import assert from 'node:assert/strict';
import { ApiextensionsV1Api, PatchStrategy, setHeaderOptions, type V1CustomResourceDefinition } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, test } from 'vitest';
import { schemaRevisionAnnotation, schemaRevisionOf } from '../../operator/src/crd/decide.js';
import { applyBundledCrds, crdFieldManager, readBundledCrds } from '../../operator/src/crd/installer.js';
import { onRealCluster } from '../support/fake-kube/index.js';
import { conditionOf, isKubeStatus, startOperatorTestbed, type OperatorTestbed } from '../support/operator-testbed.js';
import { waitFor } from '../support/wait-for.js';

const bundled = readBundledCrds();
const managedKeys = bundled.find((c) => c.metadata?.name === 'managedkeys.gateway.svc.dev')!;
const silent = pino({ level: 'silent' });

/** The schema node of spec.requestsPerMinute in a ManagedKey CRD. */
function requestsPerMinuteSchema(crd: V1CustomResourceDefinition): { maximum?: number } {
  return crd.spec.versions[0]!.schema!.openAPIV3Schema!.properties!.spec!.properties!.requestsPerMinute as { maximum?: number };
}

/** The bundled ManagedKey CRD as a previous release shipped it: no revision, at most 1000 requests per minute. */
function previousRelease(): V1CustomResourceDefinition {
  const old = structuredClone(managedKeys);
  delete old.metadata!.annotations;
  requestsPerMinuteSchema(old).maximum = 1000;
  return old;
}

describe.skipIf(onRealCluster())('CRD upgrade by the operator (fake API server)', () => {
  let bed: OperatorTestbed;
  let crds: ApiextensionsV1Api;
  const readCrd = (name: string) => crds.readCustomResourceDefinition({ name });

  beforeAll(async () => {
    bed = await startOperatorTestbed();
    crds = bed.kube.kubeConfig.makeApiClient(ApiextensionsV1Api);
  });
  afterAll(async () => {
    await bed?.close();
  });

  test('an older schema in the cluster is upgraded at start and the new field bounds apply', async () => {
    await crds.createCustomResourceDefinition({ body: previousRelease() });
    await assert.rejects(
      bed.applyManagedKey('crd-fast', { allowedModels: ['gpt-4o-mini'], requestsPerMinute: 5000 }),
      (error: unknown) => isKubeStatus(error, 422),
      'the previous schema refuses 5000 requests per minute',
    );

    const operator = await bed.startOperator('operator-0', { SVC_OPERATOR_APPLY_CRDS: 'true' });
    const upgraded = await readCrd(managedKeys.metadata!.name!);
    assert.equal(schemaRevisionOf(upgraded), schemaRevisionOf(managedKeys), 'the bundled revision is in the cluster');
    assert.equal(requestsPerMinuteSchema(upgraded).maximum, requestsPerMinuteSchema(managedKeys).maximum);
    assert.deepEqual(upgraded.status?.storedVersions, ['v1alpha1'], 'the stored version is still served');
    const regionPolicies = await readCrd('regionpolicies.gateway.svc.dev');
    assert.equal(conditionOf(regionPolicies as never, 'Established')?.status, 'True', 'an absent CRD is created');
    const metrics = await (await fetch(operator.metricsUrl!)).text();
    assert.match(metrics, /svc_operator_crd_applies_total\{crd="managedkeys.gateway.svc.dev",outcome="apply"\} 1/);

    await bed.applyManagedKey('crd-fast', { allowedModels: ['gpt-4o-mini'], requestsPerMinute: 5000 });
    await waitFor('the operator to lead', () => operator.isLeader);
    await waitFor('crd-fast Ready', async () => conditionOf(await bed.readManagedKey('crd-fast'), 'Ready')?.status === 'True');
  });

  test('a newer schema is kept and a CRD that drops a stored version is refused; neither is deleted', async () => {
    const name = managedKeys.metadata!.name!;
    const current = await readCrd(name);
    const newer = structuredClone(current);
    newer.metadata!.annotations = { ...newer.metadata!.annotations, [schemaRevisionAnnotation]: String(schemaRevisionOf(managedKeys) + 1) };
    requestsPerMinuteSchema(newer).maximum = 2_000_000;
    await crds.replaceCustomResourceDefinition({ name, body: newer });

    const [kept] = await applyBundledCrds(crds, [managedKeys], silent);
    assert.equal(kept!.decision.action, 'keep');
    assert.equal(requestsPerMinuteSchema(await readCrd(name)).maximum, 2_000_000, 'the newer schema is untouched');

    // A release that ships only a version the cluster never stored objects in.
    const renamed = structuredClone(managedKeys);
    renamed.metadata!.annotations = { [schemaRevisionAnnotation]: String(schemaRevisionOf(managedKeys) + 2) };
    renamed.spec.versions[0]!.name = 'v1beta1';
    const [refused] = await applyBundledCrds(crds, [renamed], silent);
    assert.deepEqual(refused!.decision, { action: 'refuse', reason: 'drops-stored-version', versions: ['v1alpha1'] });
    const after = await readCrd(name);
    assert.deepEqual(
      after.spec.versions.map((v) => v.name),
      ['v1alpha1'],
      'still served',
    );
    assert.equal(bed.kube.fake!.requests('delete', 'customresourcedefinitions'), 0, 'no CRD was ever deleted');
  });

  test('an apply is conditional on what was read: a stale one is refused (409), read again and decided again', async () => {
    const name = 'regionpolicies.gateway.svc.dev';
    const current = await readCrd(name);
    const stale = { ...structuredClone(bundled.find((c) => c.metadata?.name === name)!), metadata: { name, resourceVersion: '1' } };
    await assert.rejects(
      crds.patchCustomResourceDefinition(
        { name, body: stale, fieldManager: crdFieldManager, force: true },
        setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply),
      ),
      (error: unknown) => isKubeStatus(error, 409),
      'the fake API server honours the precondition',
    );
    const patchesBefore = bed.kube.fake!.requests('patch', 'customresourcedefinitions');
    bed.kube.fake!.failNext('customresourcedefinitions', 1, 409, 'patch'); // another replica wrote in between
    const [outcome] = await applyBundledCrds(
      crds,
      bundled.filter((c) => c.metadata?.name === name),
      silent,
    );
    assert.equal(outcome!.decision.action, 'apply');
    assert.equal(
      bed.kube.fake!.requests('patch', 'customresourcedefinitions') - patchesBefore,
      2,
      'refused once, applied on the second try',
    );
    assert.equal(
      (await readCrd(name)).metadata?.resourceVersion,
      current.metadata?.resourceVersion,
      'and, the content being the same, changed nothing',
    );
  });

  test('server-side apply names its field manager and the same revision applies as a no-op', async () => {
    const before = await readCrd('regionpolicies.gateway.svc.dev');
    const [outcome] = await applyBundledCrds(
      crds,
      bundled.filter((c) => c.metadata?.name === 'regionpolicies.gateway.svc.dev'),
      silent,
    );
    assert.deepEqual(outcome!.decision, { action: 'apply', reason: 'same' });
    const after = await readCrd('regionpolicies.gateway.svc.dev');
    assert.equal(after.metadata?.resourceVersion, before.metadata?.resourceVersion, 'nothing changed, no new version');
    assert.equal(crdFieldManager, 'svc-gateway-operator');
  });
});
