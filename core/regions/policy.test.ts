import { test } from 'vitest';
import assert from 'node:assert/strict';
import { RegionPolicies } from './policy.js';

test('a region no policy lists is unrestricted; a listed region allows only its suppliers', () => {
  const policies = RegionPolicies.from([
    { name: 'eu', regions: [{ region: 'EU', allowedSuppliers: ['sim-eu'] }], failurePolicy: 'HardFail' },
  ]);
  assert.equal(policies.allows('EU', 'sim-eu'), true, 'a listed supplier is allowed');
  assert.equal(policies.allows('EU', 'sim-eu-2'), false, 'an unlisted supplier is refused in a listed region');
  assert.equal(policies.allows('US', 'sim-us'), true, 'an unlisted region is unrestricted');
  assert.equal(policies.allowedSuppliers('US'), undefined, 'no restriction is reported for an unlisted region');
  assert.deepEqual(policies.restrictedRegions(), ['EU'], 'the restricted regions are listed');
  assert.equal(RegionPolicies.none.allows('EU', 'anything'), true, 'without policies everything is allowed');
});

test('several policies listing one region allow only what all of them allow', () => {
  const policies = RegionPolicies.from([
    { name: 'a', regions: [{ region: 'EU', allowedSuppliers: ['one', 'two'] }], failurePolicy: 'HardFail' },
    { name: 'b', regions: [{ region: 'EU', allowedSuppliers: ['two', 'three'] }], failurePolicy: 'HardFail' },
  ]);
  assert.deepEqual([...(policies.allowedSuppliers('EU') ?? [])], ['two'], 'the intersection is allowed');
});
