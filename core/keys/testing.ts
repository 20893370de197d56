// Test fixture: a complete key record, for tests of code that reads keys without a database.
import type { KeyRecord } from './record.js';

/** An active API-sourced key with no limits; `overrides` set what a test cares about. */
export function sampleKeyRecord(overrides: Partial<KeyRecord> = {}): KeyRecord {
  return {
    id: 'key_00000000000000000001',
    kind: 'managed',
    name: 'sample',
    secretHash: 'hash-1',
    secretHint: 'svc-sk-…abcd',
    status: 'active',
    allowedModels: null,
    allowedRegions: null,
    budgetLimitUsd: null,
    budgetPeriod: null,
    rateLimitRpm: null,
    metadata: {},
    payerId: null,
    source: 'api',
    managedBy: null,
    number: 1,
    ownerUserId: null,
    organisationId: null,
    createdAt: '2030-01-01T00:00:00.000Z',
    updatedAt: '2030-01-01T00:00:00.000Z',
    ...overrides,
  };
}
