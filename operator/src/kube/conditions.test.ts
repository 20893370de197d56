import { test } from 'vitest';
import assert from 'node:assert/strict';
import { mergeConditions } from './conditions.js';

test('a condition keeps its transition time until its status changes', () => {
  const t0 = new Date('2030-01-01T00:00:00.123Z');
  const t1 = new Date('2030-01-01T00:05:00Z');
  const first = mergeConditions(undefined, [{ type: 'Ready', status: 'False', reason: 'Provisioning', message: '' }], 1, t0);
  assert.deepEqual(
    first,
    [
      {
        type: 'Ready',
        status: 'False',
        reason: 'Provisioning',
        message: '',
        observedGeneration: 1,
        lastTransitionTime: '2030-01-01T00:00:00Z',
      },
    ],
    'a new condition starts now',
  );
  const same = mergeConditions(first, [{ type: 'Ready', status: 'False', reason: 'StillProvisioning', message: 'x' }], 2, t1);
  assert.equal(same[0]?.lastTransitionTime, '2030-01-01T00:00:00Z', 'the same status keeps its transition time');
  assert.equal(same[0]?.observedGeneration, 2, 'the observed generation follows the spec');
  const changed = mergeConditions(same, [{ type: 'Ready', status: 'True', reason: 'Ready', message: '' }], 2, t1);
  assert.equal(changed[0]?.lastTransitionTime, '2030-01-01T00:05:00Z', 'a status change moves the transition time');
});
