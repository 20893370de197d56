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

test('auto honours the key’s autorouter policy: preferred models first, exclusions, premium mode', () => {
  const catalogue = buildCatalogue(
    {
      suppliers: [
        {
          name: 'sim',
          region: 'EU',
          models: [
            { id: 'mini', input_usd_per_mtok: 0.1, output_usd_per_mtok: 0.4 },
            { id: 'std', input_usd_per_mtok: 1, output_usd_per_mtok: 4 },
            { id: 'large', input_usd_per_mtok: 3, output_usd_per_mtok: 12 },
            { id: 'vision', input_usd_per_mtok: 5, output_usd_per_mtok: 15, capabilities: ['chat', 'vision'] },
          ],
        },
      ].map((s) => ({ ...s, protocol: 'openai', base_url: 'http://127.0.0.1:1/v1' })),
    },
    {},
  );
  const withPolicy = (autorouter: { mode: 'cheapest' | 'premium'; prefer: string[]; exclude: string[] }) => ({ ...key, autorouter });
  assert.equal(resolveAutoModel(catalogue, withPolicy({ mode: 'premium', prefer: [], exclude: [] }), needs), 'vision');
  assert.equal(resolveAutoModel(catalogue, withPolicy({ mode: 'premium', prefer: [], exclude: ['vision'] }), needs), 'large');
  assert.equal(resolveAutoModel(catalogue, withPolicy({ mode: 'cheapest', prefer: [], exclude: ['mini'] }), needs), 'std');
  assert.equal(
    resolveAutoModel(catalogue, withPolicy({ mode: 'cheapest', prefer: ['nope', 'large', 'std'], exclude: [] }), needs),
    'large',
    'the first preferred model that is usable',
  );
  assert.equal(
    resolveAutoModel(catalogue, withPolicy({ mode: 'cheapest', prefer: ['vision'], exclude: [] }), {
      ...needs,
      capabilities: ['chat', 'tools'],
    }),
    'mini',
    'a preferred model without a needed capability is passed over',
  );
  assert.equal(
    resolveAutoModel(
      catalogue,
      { ...withPolicy({ mode: 'cheapest', prefer: ['large'], exclude: [] }), allowedModels: ['mini', 'std'] },
      needs,
    ),
    'mini',
    'a preferred model the key may not use is passed over',
  );
  assert.throws(
    () => resolveAutoModel(catalogue, withPolicy({ mode: 'cheapest', prefer: [], exclude: ['mini', 'std', 'large', 'vision'] }), needs),
    (e: { code?: string; humanMessage?: string }) => e.code === 'autorouter_no_candidate' && /excludes/.test(e.humanMessage ?? ''),
  );
});
