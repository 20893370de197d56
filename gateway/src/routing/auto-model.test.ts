import { test } from 'vitest';
import assert from 'node:assert/strict';
import { buildCatalogue } from '../../../core/config/index.js';
import { sampleKeyRecord } from '../../../core/keys/testing.js';
import { RegionPolicies } from '../../../core/regions/index.js';
import { resolveAutoModel } from './auto-model.js';

const key = sampleKeyRecord();
const needs = { capabilities: ['chat'] as const, promptTokens: 10, region: 'EU', protocols: ['openai'] as const };

test('auto skips a model whose only routes a region policy forbids, as routing would', () => {
  const base = buildCatalogue(
    {
      suppliers: [
        { name: 'cheap-eu', region: 'EU', models: [{ id: 'cheap', input_usd_per_mtok: 0.1, output_usd_per_mtok: 0.1 }] },
        { name: 'dear-eu', region: 'EU', models: [{ id: 'dear', input_usd_per_mtok: 5, output_usd_per_mtok: 5 }] },
      ].map((s) => ({ ...s, protocol: 'openai', base_url: 'http://127.0.0.1:1/v1' })),
    },
    {},
  );
  assert.equal(resolveAutoModel(base, key, needs), 'cheap', 'without a policy the cheapest model');
  const policies = RegionPolicies.from([
    { name: 'eu', regions: [{ region: 'EU', allowedSuppliers: ['dear-eu'] }], failurePolicy: 'HardFail' },
  ]);
  assert.equal(
    resolveAutoModel({ ...base, regionPolicies: { current: () => policies } }, key, needs),
    'dear',
    'the policy rules the cheap route out',
  );
});
