// Observable operator (issue 21): reconcile outcomes a person should see become Kubernetes
// Events on the ManagedKey (`kubectl describe managedkey`): a Secret written and a key issued
// (Normal), a Secret name taken by someone else (Warning, once, not on every resync). On the
// fake API server.
import assert from 'node:assert/strict';
import type { CoreV1Event } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, test } from 'vitest';
import type { RunningOperator } from '../../operator/src/operator.js';
import { startOperatorTestbed, conditionOf, type OperatorTestbed } from '../support/operator-testbed.js';
import { waitFor } from '../support/wait-for.js';

describe('operator Events', () => {
  let bed: OperatorTestbed;
  let operator: RunningOperator;
  beforeAll(async () => {
    bed = await startOperatorTestbed();
    operator = await bed.startOperator();
    await waitFor('the operator to lead', () => operator.isLeader);
  });
  afterAll(async () => {
    await bed?.close();
  });

  const eventsAbout = async (name: string): Promise<CoreV1Event[]> =>
    (await bed.core.listNamespacedEvent({ namespace: bed.kube.namespace })).items.filter(
      (e) => e.involvedObject.kind === 'ManagedKey' && e.involvedObject.name === name,
    );

  test('a new ManagedKey: SecretCreated and KeyCreated, Normal, pointing at the object', async () => {
    const applied = await bed.applyManagedKey('events-a', { allowedModels: ['gpt-4o-mini'] });
    await waitFor('KeyCreated', async () => (await eventsAbout('events-a')).some((e) => e.reason === 'KeyCreated'));
    const events = await eventsAbout('events-a');
    assert.deepEqual(events.map((e) => [e.type, e.reason]).sort(), [
      ['Normal', 'KeyCreated'],
      ['Normal', 'SecretCreated'],
    ]);
    for (const e of events) {
      assert.equal(e.involvedObject.uid, applied.metadata?.uid, 'the event names the object by uid');
      assert.equal(e.involvedObject.apiVersion, 'gateway.svc.dev/v1alpha1');
      assert.equal(e.source?.component, 'svc-gateway-operator');
    }
  });

  test('a Secret name taken by someone else: one SecretConflict Warning, not repeated while nothing changes', async () => {
    await bed.core.createNamespacedSecret({
      namespace: bed.kube.namespace,
      body: { metadata: { name: 'events-b-key' }, data: { apiKey: Buffer.from('theirs').toString('base64') } },
    });
    await bed.applyManagedKey('events-b', { allowedModels: ['gpt-4o-mini'] });
    await waitFor('SecretConflict', async () => (await eventsAbout('events-b')).some((e) => e.reason === 'SecretConflict'));
    // A change elsewhere (another key reconciled to Ready) proves the controller kept working meanwhile.
    await bed.applyManagedKey('events-c', { allowedModels: ['gpt-4o-mini'] });
    await waitFor('events-c Ready', async () => conditionOf(await bed.readManagedKey('events-c'), 'Ready')?.status === 'True');
    const conflicts = (await eventsAbout('events-b')).filter((e) => e.reason === 'SecretConflict');
    assert.equal(conflicts.length, 1, 'one Warning for one conflict');
    assert.equal(conflicts[0]!.type, 'Warning');
    assert.match(conflicts[0]!.message ?? '', /Secret events-b-key exists and is not owned by this ManagedKey/);
  });
});
