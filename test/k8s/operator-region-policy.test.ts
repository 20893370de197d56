// RegionPolicy through the operator into the gateway's routing (fake or real Kubernetes API;
// real PostgreSQL and Redis when DATABASE_URL / REDIS_URL are set, else embedded).
import { afterAll, beforeAll, describe, test } from 'vitest';
import assert from 'node:assert/strict';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { RegionPolicyRepository, regionPolicyChannel } from '../../core/regions/index.js';
import type { RunningOperator } from '../../operator/src/operator.js';
import type { RegionPolicyObject } from '../../operator/src/region-policy/resource.js';
import {
  conditionOf,
  crdGroup,
  crdVersion,
  flakyStore,
  isKubeStatus,
  startOperatorTestbed,
  type OperatorTestbed,
} from '../support/operator-testbed.js';
import { waitFor } from '../support/wait-for.js';

const plural = 'regionpolicies';
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

describe('RegionPolicy through the operator', () => {
  let bed: OperatorTestbed;
  let operator: RunningOperator;
  let apiKey: string;
  // Cluster-scoped: a name per run, so runs against one real cluster do not collide.
  let name: string;

  beforeAll(async () => {
    bed = await startOperatorTestbed([
      { name: 'sim-eu-1', region: 'EU' },
      { name: 'sim-eu-2', region: 'EU' },
      { name: 'sim-us', region: 'US' },
    ]);
    name = `residency-${bed.kube.namespace}`;
    operator = await bed.startOperator();
    await waitFor('the operator to lead', () => operator.isLeader);
    apiKey = await bed.gateway.createKey();
  });
  afterAll(async () => {
    for (const created of [name, `${name}-blip`, `${name}-abandoned`, `${name}-kept`])
      await bed.customObjects
        .deleteClusterCustomObject({ group: crdGroup, version: crdVersion, plural, name: created })
        .catch(() => undefined);
    await bed.close();
  });

  // A new conversation per request: session affinity would otherwise keep a conversation on
  // the supplier that served it first.
  let conversation = 0;
  const route = async (region: string) => {
    conversation += 1;
    const res = await fetch(`${bed.gateway.gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
      body: JSON.stringify({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: `conversation ${conversation}` }],
        max_tokens: 5,
        region,
      }),
    });
    const body = (await res.json()) as { error?: { code: string } };
    return res.status === 200 ? `served by ${res.headers.get('x-svc-supplier')}` : `refused: ${body.error?.code}`;
  };
  const readPolicy = async (policy = name) => {
    try {
      return (await bed.customObjects.getClusterCustomObject({
        group: crdGroup,
        version: crdVersion,
        plural,
        name: policy,
      })) as RegionPolicyObject;
    } catch (error) {
      if (isKubeStatus(error, 404)) return undefined;
      throw error;
    }
  };

  test('routing follows the policy as it is applied, changed and deleted', async () => {
    assert.equal(await route('EU'), 'served by sim-eu-1', 'without a policy the first-priority EU supplier serves');

    await bed.customObjects.createClusterCustomObject({
      group: crdGroup,
      version: crdVersion,
      plural,
      body: {
        apiVersion: `${crdGroup}/${crdVersion}`,
        kind: 'RegionPolicy',
        metadata: { name },
        spec: { regions: [{ region: 'EU', allowedSuppliers: ['sim-eu-2'] }], failurePolicy: 'HardFail' },
      },
    });
    await waitFor('EU routing to follow the policy', async () => (await route('EU')) === 'served by sim-eu-2');
    assert.equal(await route('US'), 'served by sim-us', 'a region the policy does not list is unaffected');
    await waitFor('Ready and resolved', async () => {
      const policy = await readPolicy();
      return conditionOf(policy, 'Ready')?.status === 'True' && conditionOf(policy, 'PolicyResolved')?.status === 'True';
    });
    assert.deepEqual(
      await new RegionPolicyRepository(bed.gateway.database.knex).find(name),
      { name, regions: [{ region: 'EU', allowedSuppliers: ['sim-eu-2'] }], failurePolicy: 'HardFail' },
      'the policy is in PostgreSQL',
    );

    // Only a supplier of another region: nothing in EU may serve, and nothing is sent elsewhere.
    await bed.customObjects.patchClusterCustomObject(
      { group: crdGroup, version: crdVersion, plural, name, body: { spec: { regions: [{ region: 'EU', allowedSuppliers: ['sim-us'] }] } } },
      mergePatch,
    );
    await waitFor('EU requests to fail hard', async () => (await route('EU')) === 'refused: provider_redirect_forbidden');
    await waitFor('the contradiction to be reported', async () => conditionOf(await readPolicy(), 'PolicyResolved')?.status === 'False');

    await bed.customObjects.deleteClusterCustomObject({ group: crdGroup, version: crdVersion, plural, name });
    await waitFor('the policy object to go', async () => (await readPolicy()) === undefined);
    await waitFor('EU routing to be unrestricted again', async () => (await route('EU')) === 'served by sim-eu-1');
    assert.equal(await new RegionPolicyRepository(bed.gateway.database.knex).find(name), undefined, 'the policy row is deleted');
  });

  test('an announcement that fails after the policy row was written is made by the retry', async () => {
    const blip = `${name}-blip`;
    const policies = new RegionPolicyRepository(bed.gateway.database.knex);
    const flaky = flakyStore(bed.gateway.store);
    await operator.stop();
    operator = await bed.startOperator('flaky-store', {}, undefined, flaky.store);
    await waitFor('the operator to lead', () => operator.isLeader);
    const spec = (allowed: string) => ({ regions: [{ region: 'EU', allowedSuppliers: [allowed] }], failurePolicy: 'HardFail' });
    await bed.customObjects.createClusterCustomObject({
      group: crdGroup,
      version: crdVersion,
      plural,
      body: { apiVersion: `${crdGroup}/${crdVersion}`, kind: 'RegionPolicy', metadata: { name: blip }, spec: spec('sim-eu-1') },
    });
    // Ready is written after the first announcement, so the subscription below cannot see that one.
    await waitFor('the policy Ready', async () => conditionOf(await readPolicy(blip), 'Ready')?.status === 'True');

    const announced: string[] = [];
    const unsubscribe = await bed.gateway.store.subscribe(regionPolicyChannel, (message) => announced.push(message));
    try {
      // The row changes, its announcement fails, and the retry finds the row as wanted. Gateways
      // reload every 30 s anyway, but until then they would route by the old policy.
      flaky.failNext('publish', (channel) => channel === regionPolicyChannel);
      await bed.customObjects.patchClusterCustomObject(
        { group: crdGroup, version: crdVersion, plural, name: blip, body: { spec: spec('sim-eu-2') } },
        mergePatch,
      );
      await waitFor('the row to change', async () => (await policies.find(blip))?.regions[0]?.allowedSuppliers[0] === 'sim-eu-2');
      await waitFor('the change to be announced', () => announced.includes(blip));
      assert.equal(flaky.failures, 1, 'the first announcement failed');
      await waitFor('EU routing to follow the changed policy', async () => (await route('EU')) === 'served by sim-eu-2');
    } finally {
      await unsubscribe();
    }
    await bed.customObjects.deleteClusterCustomObject({ group: crdGroup, version: crdVersion, plural, name: blip });
    await waitFor('the policy object to go', async () => (await readPolicy(blip)) === undefined);
  });

  test('a RegionPolicy removed while no operator ran (finalizer taken off by hand) has its row swept by the next leader', async () => {
    const policies = new RegionPolicyRepository(bed.gateway.database.knex);
    const create = (policy: string, allowed: string) =>
      bed.customObjects.createClusterCustomObject({
        group: crdGroup,
        version: crdVersion,
        plural,
        body: {
          apiVersion: `${crdGroup}/${crdVersion}`,
          kind: 'RegionPolicy',
          metadata: { name: policy },
          spec: { regions: [{ region: 'EU', allowedSuppliers: [allowed] }], failurePolicy: 'HardFail' },
        },
      });
    const [abandoned, kept] = [`${name}-abandoned`, `${name}-kept`];
    await create(abandoned, 'sim-eu-2');
    await create(kept, 'sim-eu-2');
    await waitFor(
      'both policies stored',
      async () => (await policies.find(abandoned)) !== undefined && (await policies.find(kept)) !== undefined,
    );
    await waitFor('EU routing to follow them', async () => (await route('EU')) === 'served by sim-eu-2');

    await operator.stop();
    await bed.customObjects.deleteClusterCustomObject({ group: crdGroup, version: crdVersion, plural, name: abandoned });
    await bed.customObjects.patchClusterCustomObject(
      { group: crdGroup, version: crdVersion, plural, name: abandoned, body: [{ op: 'remove', path: '/metadata/finalizers' }] },
      setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
    );
    await waitFor('the object to be gone', async () => (await readPolicy(abandoned)) === undefined);
    assert.ok(await policies.find(abandoned), 'with no operator running, the row is still there');

    const announced: string[] = [];
    const unsubscribe = await bed.gateway.store.subscribe(regionPolicyChannel, (message) => announced.push(message));
    try {
      operator = await bed.startOperator('successor');
      await waitFor('the orphaned row to be swept', async () => (await policies.find(abandoned)) === undefined);
      await waitFor('the removal to be announced', () => announced.includes(abandoned));
    } finally {
      await unsubscribe();
    }
    assert.ok(await policies.find(kept), 'the live policy is kept');
    await bed.customObjects.deleteClusterCustomObject({ group: crdGroup, version: crdVersion, plural, name: kept });
    await waitFor('EU routing to be unrestricted again', async () => (await route('EU')) === 'served by sim-eu-1');
  });
});
