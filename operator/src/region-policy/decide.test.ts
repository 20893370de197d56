import { test } from 'vitest';
import assert from 'node:assert/strict';
import { policyProblems, policyRecord, regionPolicyStatus } from './decide.js';
import { parseRegionPolicySpec } from './resource.js';

test('a policy becomes a record; catalogue contradictions are reported, not enforced around', () => {
  const parsed = parseRegionPolicySpec({ regions: [{ region: 'EU', allowedSuppliers: ['eu-one', 'us-one', 'ghost'] }] });
  assert.ok(parsed.ok, 'the spec parses and failurePolicy defaults');
  assert.deepEqual(
    policyRecord('p', parsed.spec),
    { name: 'p', regions: [{ region: 'EU', allowedSuppliers: ['eu-one', 'us-one', 'ghost'] }], failurePolicy: 'HardFail' },
    'the record carries the rules',
  );
  const problems = policyProblems(
    parsed.spec,
    new Map([
      ['eu-one', 'EU'],
      ['us-one', 'US'],
    ]),
  );
  assert.deepEqual(
    problems,
    ['supplier "us-one" is in region US, not EU', 'supplier "ghost" (region EU) is not in the catalogue'],
    'both contradictions are named',
  );
  const status = regionPolicyStatus({ generation: 2, previous: undefined, now: new Date('2030-01-01T00:00:00Z'), problems });
  assert.deepEqual(
    status.conditions?.map((c) => [c.type, c.status]),
    [
      ['Ready', 'True'],
      ['Provisioned', 'True'],
      ['PolicyResolved', 'False'],
    ],
    'stored, but not fully resolved',
  );
  const invalid = regionPolicyStatus({
    generation: 3,
    previous: status,
    now: new Date('2030-01-01T00:00:00Z'),
    invalidSpec: 'regions must not repeat',
    problems: undefined,
  });
  assert.equal(invalid.conditions?.find((c) => c.type === 'PolicyResolved')?.reason, 'InvalidSpec', 'names unchecked because of the spec');
  assert.equal(
    parseRegionPolicySpec({
      regions: [
        { region: 'EU', allowedSuppliers: ['a'] },
        { region: 'EU', allowedSuppliers: ['b'] },
      ],
    }).ok,
    false,
    'a region listed twice is refused',
  );
});
