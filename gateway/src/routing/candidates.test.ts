import { test } from 'vitest';
import assert from 'node:assert/strict';
import { buildCatalogue, type Catalogue } from '../../../core/config/index.js';
import { ApiError } from '../../../core/errors/index.js';
import type { KeyRecord } from '../../../core/keys/index.js';
import { sampleKeyRecord } from '../../../core/keys/testing.js';
import { RegionPolicies } from '../../../core/regions/index.js';
import { pickCandidates } from './candidates.js';

const needs = { protocols: ['openai'] as const, capability: 'chat' as const };

function catalogueWith(policies: RegionPolicies | undefined): Catalogue {
  const catalogue = buildCatalogue(
    {
      suppliers: [
        { name: 'eu-one', region: 'EU' },
        { name: 'eu-two', region: 'EU' },
        { name: 'us-one', region: 'US' },
      ].map((s, i) => ({
        ...s,
        protocol: 'openai',
        priority: i + 1,
        base_url: 'http://127.0.0.1:1/v1',
        models: [{ id: 'm', input_usd_per_mtok: 1, output_usd_per_mtok: 1 }],
      })),
    },
    {},
  );
  return policies ? { ...catalogue, regionPolicies: { current: () => policies } } : catalogue;
}

const key: KeyRecord = sampleKeyRecord({ id: 'key_00000000000000000000', name: 'k', secretHash: 'h', source: 'crd' });

const names = (catalogue: Catalogue, region: string | undefined) =>
  pickCandidates(catalogue, 'm', key, region, needs).map((r) => r.supplier.name);

test('a region policy keeps only its suppliers in its region and leaves other regions alone', () => {
  const policies = RegionPolicies.from([
    { name: 'eu', regions: [{ region: 'EU', allowedSuppliers: ['eu-two'] }], failurePolicy: 'HardFail' },
  ]);
  assert.deepEqual(names(catalogueWith(undefined), 'EU'), ['eu-one', 'eu-two'], 'without a policy both EU suppliers serve');
  assert.deepEqual(names(catalogueWith(policies), 'EU'), ['eu-two'], 'the policy keeps only its supplier in EU');
  assert.deepEqual(names(catalogueWith(policies), undefined), ['eu-two', 'us-one'], 'an unlisted region stays unrestricted');
});

test('no supplier left under a policy is a hard failure, never a fallback elsewhere', () => {
  const policies = RegionPolicies.from([
    { name: 'eu', regions: [{ region: 'EU', allowedSuppliers: ['somewhere-else'] }], failurePolicy: 'HardFail' },
  ]);
  assert.throws(
    () => names(catalogueWith(policies), 'EU'),
    (e) => e instanceof ApiError && e.code === 'provider_redirect_forbidden' && /region policy/.test(e.humanMessage),
    'the request fails with provider_redirect_forbidden naming the policy',
  );
});

test('"auto" on an endpoint that does not route automatically is capability_unsupported naming model, not model_not_found', () => {
  for (const capability of ['embeddings', 'speech', 'chat'] as const)
    assert.throws(
      () => pickCandidates(catalogueWith(undefined), 'auto', key, undefined, { protocols: ['openai'], capability }),
      (e) =>
        e instanceof ApiError &&
        e.status === 400 &&
        e.code === 'capability_unsupported' &&
        e.param === 'model' &&
        /chat\/completions and \/v1\/messages only/.test(e.humanMessage),
      capability,
    );
});
