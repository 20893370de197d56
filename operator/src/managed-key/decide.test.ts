import { describe, expect, it, test } from 'vitest';
import assert from 'node:assert/strict';
import type { KeyRecord } from '../../../core/keys/index.js';
import { sampleKeyRecord } from '../../../core/keys/testing.js';
import {
  budgetWriteMayWait,
  desiredKey,
  infrastructureStatus,
  managedKeyStatus,
  nextBudgetCheckMs,
  planRow,
  planSecret,
  statusChanged,
  unresolvedNames,
} from './decide.js';
import { parseManagedKeySpec, type ManagedKeySpec, type ManagedKeyStatus } from './resource.js';

function spec(raw: unknown): ManagedKeySpec {
  const parsed = parseManagedKeySpec(raw);
  assert.ok(parsed.ok, 'the test spec parses');
  return parsed.spec;
}

const row = (overrides: Partial<KeyRecord> = {}): KeyRecord =>
  sampleKeyRecord({ name: 'team-a/analytics', source: 'crd', managedBy: 'ManagedKey/team-a/analytics/uid', ...overrides });

test('the spec maps onto the key row as docs/crds.md says, with defaults', () => {
  const desired = desiredKey(
    'team-a',
    'analytics',
    spec({
      allowedModels: ['gpt-4o-mini'],
      budget: { limitUsd: '12.50' },
      requestsPerMinute: 60,
      attributes: { team: 'a' },
      state: 'Suspended',
      payer: 'project:p1',
    }),
  );
  assert.deepEqual(
    desired,
    {
      name: 'team-a/analytics',
      allowedModels: ['gpt-4o-mini'],
      allowedRegions: null,
      budgetLimitUsd: 12.5,
      budgetPeriod: 'monthly',
      rateLimitRpm: 60,
      metadata: { team: 'a' },
      payerId: 'project:p1',
      status: 'suspended',
    },
    'every field maps, the period defaults to monthly',
  );
  assert.equal(parseManagedKeySpec({ budget: { limitUsd: '0' } }).ok, false, 'a zero budget is refused');
  assert.equal(parseManagedKeySpec({ state: 'Revoked' }).ok, false, 'an unknown state is refused');
});

test('the Secret is the source of the key: missing or broken means a new key, foreign means hands off', () => {
  assert.deepEqual(planSecret({ kind: 'missing' }), { action: 'create' }, 'a missing Secret is created');
  assert.deepEqual(planSecret({ kind: 'foreign' }), { action: 'conflict' }, 'a Secret of someone else is not touched');
  assert.deepEqual(
    planSecret({ kind: 'owned', apiKey: 'not-a-key' }),
    { action: 'rewrite' },
    'our Secret without a valid key is rewritten',
  );
  const apiKey = `svc-sk-${'a'.repeat(40)}`;
  assert.deepEqual(planSecret({ kind: 'owned', apiKey }), { action: 'use', apiKey }, 'our Secret with a key is used as it is');
});

test("the row is created once, rotated to the Secret's key and patched only where the spec differs", () => {
  const desired = desiredKey('team-a', 'analytics', spec({ requestsPerMinute: 10 }));
  assert.deepEqual(planRow(undefined, 'hash-1', desired), { action: 'create' }, 'no row: create');
  assert.deepEqual(planRow(row({ rateLimitRpm: 10 }), 'hash-1', desired), { action: 'none' }, 'a matching row is left alone');
  assert.deepEqual(
    planRow(row({ rateLimitRpm: 10 }), 'hash-2', desired),
    { action: 'update', rotate: true, patch: undefined },
    'a different Secret key rotates the hash',
  );
  assert.deepEqual(
    planRow(row(), 'hash-1', desired),
    { action: 'update', rotate: false, patch: { rateLimitRpm: 10 } },
    'only the changed field is patched',
  );
});

test('status: Ready with every condition, budget as decimal strings, unchanged status not rewritten', () => {
  const now = new Date('2030-01-15T10:00:00Z');
  const key = row({ budgetLimitUsd: 10, budgetPeriod: 'monthly' });
  const usage = { usedUsd: 2.125, reservedUsd: 0, remainingUsd: 7.875, resetsAt: new Date('2030-02-01T00:00:00Z'), exhausted: false };
  const unresolved = unresolvedNames(spec({ allowedModels: ['gpt-4o-mini', 'auto', 'nope'] }), {
    models: new Set(['gpt-4o-mini']),
    regions: new Set(['EU']),
  });
  const status = managedKeyStatus({
    generation: 3,
    previous: undefined,
    now,
    secretName: 'analytics-key',
    secretConflict: false,
    key,
    unresolved,
    usage,
  });
  assert.equal(status.observedGeneration, 3, "the observed generation is the spec's");
  assert.deepEqual(
    status.budget,
    { usedUsd: '2.125000', remainingUsd: '7.875000', resetsAt: '2030-02-01T00:00:00Z' },
    'budget usage as decimal strings',
  );
  const byType = Object.fromEntries((status.conditions ?? []).map((c) => [c.type, c]));
  assert.equal(byType.Ready?.status, 'True', 'the key is ready');
  assert.equal(byType.PolicyResolved?.status, 'False', 'an unknown model is reported');
  assert.match(byType.PolicyResolved?.message ?? '', /"nope"/, 'the unknown model is named; auto is always known');
  assert.equal(byType.BudgetExhausted?.status, 'False', 'within budget');
  const again = managedKeyStatus({
    generation: 3,
    previous: status,
    now: new Date('2030-01-15T11:00:00Z'),
    secretName: 'analytics-key',
    secretConflict: false,
    key,
    unresolved,
    usage,
  });
  assert.equal(statusChanged(status, again), false, 'the same observation an hour later writes nothing');
  const conflict = managedKeyStatus({
    generation: 3,
    previous: status,
    now,
    secretName: 'analytics-key',
    secretConflict: true,
    key: undefined,
    unresolved,
    usage: undefined,
  });
  assert.equal(conflict.conditions?.find((c) => c.type === 'SecretSynced')?.reason, 'SecretConflict', 'a foreign Secret is reported');
  assert.equal(conflict.conditions?.find((c) => c.type === 'Ready')?.status, 'False', 'and the key is not ready');
  // An invalid spec's names were never checked: said so, not blamed on a missing catalogue.
  const invalid = managedKeyStatus({
    generation: 4,
    previous: status,
    now,
    secretName: 'analytics-key',
    invalidSpec: 'limitUsd must be more than 0',
    secretConflict: false,
    key: undefined,
    unresolved: undefined,
    usage: undefined,
  });
  const policy = invalid.conditions?.find((c) => c.type === 'PolicyResolved');
  assert.deepEqual([policy?.status, policy?.reason], ['Unknown', 'InvalidSpec'], 'names unchecked because of the spec');
});

test('a key with a budget is looked at again at its reset or after the refresh interval', () => {
  const now = new Date('2030-01-31T23:59:00Z');
  const key = row({ budgetLimitUsd: 10, budgetPeriod: 'monthly' });
  const usage = { usedUsd: 1, reservedUsd: 0, remainingUsd: 9, resetsAt: new Date('2030-02-01T00:00:00Z'), exhausted: false };
  assert.equal(nextBudgetCheckMs(key, usage, now, 300_000), 61_000, 'the reset (plus a second) comes first');
  assert.equal(nextBudgetCheckMs(key, usage, now, 30_000), 30_000, 'the refresh interval comes first');
  assert.equal(nextBudgetCheckMs(row(), undefined, now, 30_000), undefined, 'a key without a budget is not polled');
});

describe('budgetWriteMayWait (status writes of budget usage)', () => {
  const throttle = { minChangeShare: 0.01, maxAgeMs: 600_000 };
  const status = (usedUsd: string, extra: Partial<ManagedKeyStatus> = {}): ManagedKeyStatus => ({
    observedGeneration: 1,
    keyId: 'key_1',
    budget: { usedUsd, remainingUsd: (100 - Number(usedUsd)).toFixed(6), resetsAt: '2026-12-01T00:00:00Z' },
    conditions: [],
    ...extra,
  });

  it('lets a small usage drift wait while the last write is recent', () => {
    expect(budgetWriteMayWait(status('1.000000'), status('1.500000'), 100, 60_000, throttle)).toBe(true);
  });

  it('writes a drift of at least the threshold, an old status, a reset or any other change at once', () => {
    expect(budgetWriteMayWait(status('1.000000'), status('2.000000'), 100, 60_000, throttle)).toBe(false);
    expect(budgetWriteMayWait(status('1.000000'), status('1.500000'), 100, 600_000, throttle)).toBe(false);
    const reset = status('0.000000');
    reset.budget!.resetsAt = '2027-01-01T00:00:00Z';
    expect(budgetWriteMayWait(status('0.500000'), reset, 100, 60_000, throttle)).toBe(false);
    expect(budgetWriteMayWait(status('1.000000'), status('1.500000', { observedGeneration: 2 }), 100, 60_000, throttle)).toBe(false);
    expect(budgetWriteMayWait(undefined, status('1.500000'), 100, 60_000, throttle)).toBe(false);
    expect(budgetWriteMayWait(status('1.000000'), status('1.500000'), null, 60_000, throttle)).toBe(false);
  });
});

describe('infrastructureStatus (database and store failures in status)', () => {
  it('sets Ready False naming the dependency, keeps the other conditions and fields', () => {
    const now = new Date('2026-11-26T05:00:00Z');
    const previous: ManagedKeyStatus = {
      observedGeneration: 3,
      keyId: 'key_1',
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'KeyActive',
          message: 'ok',
          observedGeneration: 3,
          lastTransitionTime: '2026-11-01T00:00:00Z',
        },
        {
          type: 'Provisioned',
          status: 'True',
          reason: 'KeyProvisioned',
          message: 'ok',
          observedGeneration: 3,
          lastTransitionTime: '2026-11-01T00:00:00Z',
        },
      ],
    };
    const next = infrastructureStatus(previous, 'DatabaseUnavailable', 'PostgreSQL could not be reached: Connection terminated', 3, now);
    expect(next.keyId).toBe('key_1');
    expect(next.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'False',
      reason: 'DatabaseUnavailable',
      lastTransitionTime: '2026-11-26T05:00:00Z',
    });
    expect(next.conditions?.find((c) => c.type === 'Provisioned')).toEqual(previous.conditions![1]);
    // The same failure again changes nothing (no status write, no transition).
    expect(
      infrastructureStatus(
        next,
        'DatabaseUnavailable',
        'PostgreSQL could not be reached: Connection terminated',
        3,
        new Date('2026-11-26T05:01:00Z'),
      ),
    ).toEqual(next);
  });
});
