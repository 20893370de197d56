// SVC_OPERATOR_WATCH_NAMESPACES (the chart's operator.watchNamespaces, issue 21): the operator
// reconciles ManagedKeys only in the namespaces its RBAC grants Secrets in; a ManagedKey
// elsewhere is left untouched (no finalizer, no Secret, no status), and one in a watched
// namespace is reconciled as usual. On the fake API server.
import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'vitest';
import type { RunningOperator } from '../../operator/src/operator.js';
import { isKubeStatus, startOperatorTestbed, conditionOf, type OperatorTestbed } from '../support/operator-testbed.js';
import { waitFor } from '../support/wait-for.js';

describe('operator limited to watched namespaces', () => {
  let bed: OperatorTestbed | undefined;
  afterEach(async () => {
    await bed?.close();
    bed = undefined;
  });

  async function secretExists(testbed: OperatorTestbed, name: string): Promise<boolean> {
    try {
      await testbed.core.readNamespacedSecret({ namespace: testbed.kube.namespace, name });
      return true;
    } catch (error) {
      if (isKubeStatus(error, 404)) return false;
      throw error;
    }
  }

  async function managedKeyReconciles(operator: RunningOperator): Promise<number> {
    const metric = await operator.metrics.reconciles.get();
    return metric.values.filter((v) => v.labels.kind === 'ManagedKey').reduce((sum, v) => sum + v.value, 0);
  }

  test('a ManagedKey outside the watched namespaces is left alone', async () => {
    bed = await startOperatorTestbed();
    const operator = await bed.startOperator('operator-0', { SVC_OPERATOR_WATCH_NAMESPACES: 'team-a, team-b' });
    await waitFor('the operator to lead', () => operator.isLeader);
    await bed.applyManagedKey('elsewhere', { allowedModels: ['gpt-4o-mini'] });
    await waitFor('the ManagedKey to pass through the controller', async () => (await managedKeyReconciles(operator)) >= 1);
    const object = await bed.readManagedKey('elsewhere');
    assert.deepEqual(object?.metadata?.finalizers ?? [], [], 'no finalizer added');
    assert.equal(object?.status, undefined, 'no status written');
    assert.equal(await secretExists(bed, 'elsewhere-key'), false, 'no Secret created');
  });

  test('a ManagedKey in a watched namespace is reconciled', async () => {
    bed = await startOperatorTestbed();
    const testbed = bed;
    const operator = await testbed.startOperator('operator-0', { SVC_OPERATOR_WATCH_NAMESPACES: `other,${testbed.kube.namespace}` });
    await waitFor('the operator to lead', () => operator.isLeader);
    await testbed.applyManagedKey('watched', { allowedModels: ['gpt-4o-mini'] });
    await waitFor('Ready=True', async () => conditionOf(await testbed.readManagedKey('watched'), 'Ready')?.status === 'True');
    assert.equal(await secretExists(testbed, 'watched-key'), true, 'Secret created');
  });
});
