// The operator against the fake Kubernetes API (or a real cluster with KUBECONFIG), with the
// gateway on real PostgreSQL and Redis when DATABASE_URL / REDIS_URL are set (else embedded).
import { afterAll, beforeAll, describe, test } from 'vitest';
import assert from 'node:assert/strict';
import { PatchStrategy, setHeaderOptions, type V1Secret } from '@kubernetes/client-node';
import { announceCatalogueChange, changeDatabaseCatalogue, seedDatabaseCatalogue } from '../../core/catalogue/index.js';
import { hashSecret, keyCacheKey, KeyRepository } from '../../core/keys/index.js';
import type { RunningOperator } from '../../operator/src/operator.js';
import { conditionOf, flakyStore, isKubeStatus, startOperatorTestbed, type OperatorTestbed } from '../support/operator-testbed.js';
import { waitFor } from '../support/wait-for.js';

interface Reply {
  status: number;
  body: { error?: { code: string; human_message: string } } & Record<string, unknown>;
}

async function call(base: string, method: string, path: string, token: string, body?: unknown): Promise<Reply> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Reply['body']) : {} };
}

const chat = (base: string, apiKey: string) =>
  call(base, 'POST', '/v1/chat/completions', apiKey, {
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'hello' }],
    max_tokens: 20,
  });

describe('ManagedKey through the operator', () => {
  let bed: OperatorTestbed;
  let operator: RunningOperator;

  beforeAll(async () => {
    bed = await startOperatorTestbed();
    operator = await bed.startOperator();
    await waitFor('the operator to lead', () => operator.isLeader);
  });
  afterAll(async () => {
    await bed.close();
  });

  const readSecret = async (name: string): Promise<V1Secret | undefined> => {
    try {
      return await bed.core.readNamespacedSecret({ namespace: bed.kube.namespace, name });
    } catch (error) {
      if (isKubeStatus(error, 404)) return undefined;
      throw error;
    }
  };
  const apiKeyOf = (secret: V1Secret | undefined) => Buffer.from(secret?.data?.apiKey ?? '', 'base64').toString('utf8');

  test('apply → Secret, key row and Ready; the gateway enforces spec changes; delete removes everything', async () => {
    const applied = await bed.applyManagedKey('analytics', {
      allowedModels: ['gpt-4o-mini'],
      budget: { limitUsd: '5', period: 'Daily' },
      requestsPerMinute: 600,
      attributes: { team: 'analytics' },
    });
    await waitFor('Ready=True', async () => conditionOf(await bed.readManagedKey('analytics'), 'Ready')?.status === 'True');
    const object = await bed.readManagedKey('analytics');
    assert.equal(object?.status?.observedGeneration, object?.metadata?.generation, 'status describes the current generation');
    assert.deepEqual(object?.metadata?.finalizers, ['gateway.svc.dev/managed-key-cleanup'], 'the operator added its finalizer');
    assert.equal(object?.status?.budget?.usedUsd, '0.000000', 'budget usage is in status');

    const secret = await readSecret('analytics-key');
    const apiKey = apiKeyOf(secret);
    assert.match(apiKey, /^svc-sk-[0-9A-Za-z]{40}$/, 'the Secret holds a managed key');
    assert.deepEqual(
      secret?.metadata?.ownerReferences?.map((r) => [r.kind, r.name, r.uid, r.controller]),
      [['ManagedKey', 'analytics', applied.metadata?.uid, true]],
      'the Secret is owned by the ManagedKey',
    );
    const keys = new KeyRepository(bed.gateway.database.knex, bed.gateway.pepper);
    const row = await keys.findById(object?.status?.keyId ?? '');
    assert.equal(row?.source, 'crd', 'the key row is marked as Kubernetes-owned');
    assert.equal(row?.managedBy, `ManagedKey/${bed.kube.namespace}/analytics/${applied.metadata?.uid}`, 'the row names its owner object');
    assert.equal(row?.secretHash, hashSecret(apiKey, bed.gateway.pepper), "the row holds the hash of the Secret's key");
    assert.deepEqual(
      [row?.budgetLimitUsd, row?.budgetPeriod, row?.rateLimitRpm, row?.metadata],
      [5, 'daily', 600, { team: 'analytics' }],
      'the row follows the spec',
    );
    const dump = JSON.stringify(await bed.gateway.database.knex('api_keys').select('*'));
    assert.ok(!dump.includes(apiKey), 'the clear key is stored nowhere in PostgreSQL');

    const base = bed.gateway.gateway.url;
    assert.equal((await chat(base, apiKey)).status, 200, 'the gateway accepts the key');

    const patch = await call(base, 'PATCH', `/v1/manage/keys/${row?.id}`, bed.gateway.adminKey, { rate_limit_rpm: 1 });
    assert.equal(patch.status, 409, 'the Management API cannot change a Kubernetes-owned key');
    assert.equal(patch.body.error?.code, 'conflict', 'the refusal is the catalogue conflict error');
    assert.match(patch.body.error?.human_message ?? '', /ManagedKey/, 'the message says to change the ManagedKey');
    const revoke = await call(base, 'POST', `/v1/manage/keys/${row?.id}/revoke`, bed.gateway.adminKey);
    assert.equal(revoke.status, 409, 'nor revoke it');

    // A limit far below one request's worst-case cost: the next request is refused.
    await bed.patchManagedKeySpec('analytics', { budget: { limitUsd: '0.000001', period: 'Daily' } });
    await waitFor('the gateway to enforce the new limit', async () => (await chat(base, apiKey)).status === 402);
    assert.equal((await keys.findById(row!.id))?.budgetLimitUsd, 0.000001, 'the row has the new limit');

    await bed.patchManagedKeySpec('analytics', { budget: { limitUsd: '5', period: 'Daily' }, state: 'Suspended' });
    await waitFor('the gateway to refuse the suspended key', async () => (await chat(base, apiKey)).body.error?.code === 'account_status');
    await waitFor(
      'status to follow the suspension',
      async () => conditionOf(await bed.readManagedKey('analytics'), 'Ready')?.reason === 'Suspended',
    );

    await bed.patchManagedKeySpec('analytics', { state: 'Active' });
    await waitFor('the gateway to accept the key again', async () => (await chat(base, apiKey)).status === 200);

    await bed.customObjects.deleteNamespacedCustomObject({
      group: 'gateway.svc.dev',
      version: 'v1alpha1',
      namespace: bed.kube.namespace,
      plural: 'managedkeys',
      name: 'analytics',
    });
    await waitFor('the ManagedKey to go', async () => (await bed.readManagedKey('analytics')) === undefined);
    await waitFor('the Secret to be collected', async () => (await readSecret('analytics-key')) === undefined);
    assert.equal(await keys.findById(row!.id), undefined, 'the key row is deleted');
    assert.equal(await bed.gateway.store.get(keyCacheKey(row!.secretHash)), null, 'the cached key is gone');
    assert.equal((await chat(base, apiKey)).body.error?.code, 'invalid_api_key', 'the gateway refuses the deleted key');
  });

  test('a Secret that belongs to someone else is left alone and reported', async () => {
    await bed.core.createNamespacedSecret({
      namespace: bed.kube.namespace,
      body: { metadata: { name: 'taken' }, stringData: { apiKey: 'not ours' } },
    });
    await bed.applyManagedKey('collides', { secretName: 'taken' });
    await waitFor(
      'SecretSynced=False',
      async () => conditionOf(await bed.readManagedKey('collides'), 'SecretSynced')?.reason === 'SecretConflict',
    );
    assert.equal(apiKeyOf(await readSecret('taken')), 'not ours', 'the foreign Secret is untouched');
    assert.equal(conditionOf(await bed.readManagedKey('collides'), 'Ready')?.status, 'False', 'the key is not ready');
  });

  test("a crash between writing the Secret and the key row converges to that Secret's key, without a second Secret", async () => {
    // What a crash leaves after the Secret was written and before the row was: the ManagedKey
    // with our finalizer and the Secret with the key, no row, no status.
    const object = await bed.applyManagedKey('crashed', { state: 'Active' });
    await waitFor('the first reconcile', async () => conditionOf(await bed.readManagedKey('crashed'), 'Ready')?.status === 'True');
    const keys = new KeyRepository(bed.gateway.database.knex, bed.gateway.pepper);
    const owner = `ManagedKey/${bed.kube.namespace}/crashed/${object.metadata?.uid}`;
    const first = await keys.findByManagedBy(owner);
    const apiKey = apiKeyOf(await readSecret('crashed-key'));
    await keys.delete(first!.id);
    await bed.patchManagedKeySpec('crashed', { requestsPerMinute: 100 });
    await waitFor('the row to be recreated', async () => (await keys.findByManagedBy(owner))?.rateLimitRpm === 100);
    const again = await keys.findByManagedBy(owner);
    assert.equal(
      again?.secretHash,
      hashSecret(apiKey, bed.gateway.pepper),
      "the row is rebuilt from the Secret's key: the key handed out still works",
    );
    assert.equal(apiKeyOf(await readSecret('crashed-key')), apiKey, 'the Secret was not rewritten');
    const secrets = await bed.core.listNamespacedSecret({
      namespace: bed.kube.namespace,
      labelSelector: 'gateway.svc.dev/managed-key=crashed',
    });
    assert.equal(secrets.items.length, 1, 'there is exactly one Secret for the key');
    assert.equal((await chat(bed.gateway.gateway.url, apiKey)).status, 200, 'the gateway accepts the key');
  });
  test('the longest names a ManagedKey may have get a key, a Secret the API server accepts, and a label that fits', async () => {
    // 249 characters without secretName (<name>-key is then 253), 253 with it (docs/crds.md): the row's
    // `<namespace>/<name>` did not fit 200 characters, and a label value holds at most 63.
    const named = [
      { name: `a${'b'.repeat(247)}c`, spec: {} },
      { name: `long.${'d'.repeat(247)}e`, spec: { secretName: 'long-one' } },
    ];
    for (const { name, spec } of named) {
      await bed.applyManagedKey(name, spec);
      await waitFor(
        `Ready=True for ${name.length} characters`,
        async () => conditionOf(await bed.readManagedKey(name), 'Ready')?.status === 'True',
      );
      const secret = await readSecret(spec.secretName ?? `${name}-key`);
      const label = secret?.metadata?.labels?.['gateway.svc.dev/managed-key'] ?? '';
      assert.match(label, new RegExp(`^${name.slice(0, 52).replace('.', '\\.')}-[0-9a-f]{10}$`));
      assert.equal(secret?.metadata?.annotations?.['gateway.svc.dev/managed-key'], name, 'the annotation holds the whole name');
      const rows = await new KeyRepository(bed.gateway.database.knex, bed.gateway.pepper).list({
        namePrefix: `${bed.kube.namespace}/${name.slice(0, 40)}`,
        limit: 10,
      });
      assert.deepEqual(
        rows.data.map((row) => row.name),
        [`${bed.kube.namespace}/${name}`],
      );
      assert.equal((await chat(bed.gateway.gateway.url, apiKeyOf(secret))).status, 200, 'the gateway accepts the key');
    }
  });

  test('a reconcile the API server refuses is Ready=False ReconcileError naming the refusal, until the retry succeeds', async () => {
    bed.kube.fake!.failNext('secrets', 2, 422, 'create');
    await bed.applyManagedKey('refused', {});
    let ready = conditionOf(await bed.readManagedKey('refused'), 'Ready');
    await waitFor('Ready=False ReconcileError', async () => {
      ready = conditionOf(await bed.readManagedKey('refused'), 'Ready');
      return ready?.reason === 'ReconcileError';
    });
    assert.equal(ready?.status, 'False');
    assert.match(ready?.message ?? '', /^The reconcile failed: HTTP 422/);
    await waitFor('Ready=True after the retry', async () => conditionOf(await bed.readManagedKey('refused'), 'Ready')?.status === 'True');
  });

  test('a ManagedKey removed while no operator ran (finalizer taken off by hand) has its key swept by the next leader', async () => {
    const object = await bed.applyManagedKey('abandoned', {});
    await waitFor('Ready=True', async () => conditionOf(await bed.readManagedKey('abandoned'), 'Ready')?.status === 'True');
    const keys = new KeyRepository(bed.gateway.database.knex, bed.gateway.pepper);
    const row = await keys.findByManagedBy(`ManagedKey/${bed.kube.namespace}/abandoned/${object.metadata?.uid}`);
    assert.ok(row, 'the key row exists');
    const keeper = await bed.applyManagedKey('kept', {});
    await waitFor('the second key Ready', async () => conditionOf(await bed.readManagedKey('kept'), 'Ready')?.status === 'True');
    await operator.stop();
    const { group, version } = { group: 'gateway.svc.dev', version: 'v1alpha1' };
    const target = { group, version, namespace: bed.kube.namespace, plural: 'managedkeys', name: 'abandoned' };
    await bed.customObjects.deleteNamespacedCustomObject(target);
    await bed.customObjects.patchNamespacedCustomObject(
      { ...target, body: [{ op: 'remove', path: '/metadata/finalizers' }] },
      setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
    );
    await waitFor('the object to be gone', async () => (await bed.readManagedKey('abandoned')) === undefined);
    assert.ok(await keys.findById(row.id), 'with no operator running, the row is still there');

    operator = await bed.startOperator('successor');
    await waitFor('the orphaned row to be swept', async () => (await keys.findById(row.id)) === undefined);
    assert.ok(await keys.findByManagedBy(`ManagedKey/${bed.kube.namespace}/kept/${keeper.metadata?.uid}`), 'the live key is kept');
  });

  test('a key announcement that fails after the row was written is made by the retry: suspended and deleted keys stop working at once', async () => {
    // This operator's store fails on demand; the gateway's does not.
    const flaky = flakyStore(bed.gateway.store);
    await operator.stop();
    operator = await bed.startOperator('flaky-store', {}, undefined, flaky.store);
    await waitFor('the operator to lead', () => operator.isLeader);
    const object = await bed.applyManagedKey('blip', {});
    await waitFor('Ready=True', async () => conditionOf(await bed.readManagedKey('blip'), 'Ready')?.status === 'True');
    const apiKey = apiKeyOf(await readSecret('blip-key'));
    const hash = hashSecret(apiKey, bed.gateway.pepper);
    const base = bed.gateway.gateway.url;
    assert.equal((await chat(base, apiKey)).status, 200, 'the gateway accepts the key (and has it cached)');

    // The suspension reaches the row, then its announcement fails; the retry finds the row as
    // wanted. Without the owed announcement the gateway would use its cached copy for minutes.
    flaky.failNext('del', (key) => key === keyCacheKey(hash));
    await bed.patchManagedKeySpec('blip', { state: 'Suspended' });
    await waitFor(
      'status to follow the suspension',
      async () => conditionOf(await bed.readManagedKey('blip'), 'Ready')?.reason === 'Suspended',
    );
    assert.equal(flaky.failures, 1, 'the announcement failed once');
    await waitFor('the gateway to refuse the suspended key', async () => (await chat(base, apiKey)).body.error?.code === 'account_status');

    // The same for deletion: the row goes, dropping its cache entry fails, the finalizer waits.
    flaky.failNext('del', (key) => key === keyCacheKey(hash));
    await bed.customObjects.deleteNamespacedCustomObject({
      group: 'gateway.svc.dev',
      version: 'v1alpha1',
      namespace: bed.kube.namespace,
      plural: 'managedkeys',
      name: 'blip',
    });
    await waitFor('the ManagedKey to go', async () => (await bed.readManagedKey('blip')) === undefined);
    assert.equal(flaky.failures, 2, 'the eviction failed once');
    const keys = new KeyRepository(bed.gateway.database.knex, bed.gateway.pepper);
    assert.equal(
      await keys.findByManagedBy(`ManagedKey/${bed.kube.namespace}/blip/${object.metadata?.uid}`),
      undefined,
      'the key row is deleted',
    );
    assert.equal(await bed.gateway.store.get(keyCacheKey(hash)), null, 'the cached key is gone');
    await waitFor('the gateway to refuse the deleted key', async () => (await chat(base, apiKey)).body.error?.code === 'invalid_api_key');
  });
});

describe('ManagedKey names against the stored catalogue (SVC_CATALOG_SOURCE=database)', () => {
  let bed: OperatorTestbed;

  beforeAll(async () => {
    bed = await startOperatorTestbed();
    // The stored catalogue (what the portal's administrators change) serves a model the file lacks.
    const document = structuredClone(bed.gateway.config.catalogueDocument) as { suppliers: { models: { id: string }[] }[] };
    document.suppliers[0]!.models.push({ id: 'stored-only-model', input_usd_per_mtok: 1, output_usd_per_mtok: 1 } as { id: string });
    assert.equal(await seedDatabaseCatalogue(bed.gateway.database.knex, document), true);
    const operator = await bed.startOperator('operator-db', { SVC_CATALOG_SOURCE: 'database' });
    await waitFor('the operator to lead', () => operator.isLeader);
  });
  afterAll(async () => {
    await bed.close();
  });

  const resolved = async (name: string) => conditionOf(await bed.readManagedKey(name), 'PolicyResolved');

  test('a model only the stored catalogue has resolves, and one an admin adds later resolves without a restart', async () => {
    await bed.applyManagedKey('stored-model-key', { allowedModels: ['stored-only-model'] });
    await waitFor('PolicyResolved=True', async () => (await resolved('stored-model-key'))?.status === 'True');

    await bed.applyManagedKey('later-model-key', { allowedModels: ['added-later'] });
    await waitFor('PolicyResolved=False naming the model', async () => (await resolved('later-model-key'))?.status === 'False');
    assert.match((await resolved('later-model-key'))?.message ?? '', /added-later/);

    const knex = bed.gateway.database.knex;
    const { version } = await changeDatabaseCatalogue(knex, { env: {}, pepper: bed.gateway.pepper, actorId: null }, async (trx) => {
      const provider = (await trx('catalogue_providers').orderBy('id').first('id')) as { id: number };
      await trx('catalogue_models').insert({
        provider_id: provider.id,
        model_id: 'added-later',
        position: 99,
        spec: JSON.stringify({ input_usd_per_mtok: 1, output_usd_per_mtok: 1 }),
      });
    });
    await announceCatalogueChange(bed.gateway.store, version);
    await waitFor('PolicyResolved=True after the change', async () => (await resolved('later-model-key'))?.status === 'True', 30_000);
  });
});

describe('owned Secrets are watched', () => {
  let bed: OperatorTestbed;

  beforeAll(async () => {
    bed = await startOperatorTestbed();
    // No resync nor budget refresh within the test: only the Secret watch can notice a deletion.
    const operator = await bed.startOperator('operator-secrets', {
      SVC_OPERATOR_RESYNC_MS: '600000',
      SVC_OPERATOR_BUDGET_REFRESH_MS: '600000',
    });
    await waitFor('the operator to lead', () => operator.isLeader);
  });
  afterAll(async () => {
    await bed.close();
  });

  test('a deleted key Secret is written again at once (with a new key: deleting the Secret rotates it)', async () => {
    await bed.applyManagedKey('watched', { allowedModels: ['gpt-4o-mini'] });
    await waitFor('Ready=True', async () => conditionOf(await bed.readManagedKey('watched'), 'Ready')?.status === 'True');
    const read = () => bed.core.readNamespacedSecret({ namespace: bed.kube.namespace, name: 'watched-key' });
    const before = await read();
    // The reconciles that followed Ready are over (no Secret read between two looks), so what
    // brings the Secret back below is the watch, not a reconcile already under way.
    let lastReads = -1;
    await waitFor(
      'the operator to be idle',
      () => {
        const reads = bed.kube.fake?.requests('get', 'secrets') ?? 0;
        const idle = reads === lastReads;
        lastReads = reads;
        return idle;
      },
      10_000,
      500,
    );
    await bed.core.deleteNamespacedSecret({ namespace: bed.kube.namespace, name: 'watched-key' });
    await waitFor(
      'the Secret to be back',
      async () => {
        try {
          const again = await read();
          return again.metadata?.uid !== before.metadata?.uid;
        } catch (error) {
          if (isKubeStatus(error, 404)) return false;
          throw error;
        }
      },
      15_000,
    );
    // A Secret that is not the operator's (no label) changes nothing and is never read.
    await bed.core.createNamespacedSecret({
      namespace: bed.kube.namespace,
      body: { metadata: { name: 'someone-else' }, stringData: { token: 'x' } },
    });
    assert.equal(conditionOf(await bed.readManagedKey('watched'), 'Ready')?.status, 'True');
  });
});
