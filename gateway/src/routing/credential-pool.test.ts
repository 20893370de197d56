import { onTestFinished, test } from 'vitest';
import assert from 'node:assert/strict';
import { buildCatalogue } from '../../../core/config/index.js';
import { ApiError } from '../../../core/errors/index.js';
import type { CredentialEvent } from '../../../core/routing/index.js';
import { MemoryStore } from '../../../core/store/index.js';
import { credentialFailureKind, CredentialPool } from './credential-pool.js';

const catalogue = buildCatalogue(
  {
    suppliers: [
      {
        name: 'pooled',
        protocol: 'openai',
        base_url: 'http://127.0.0.1:1/v1',
        region: 'EU',
        credentials: ['a', 'b', 'c'].map((name) => ({ name, api_key_env: `KEY_${name.toUpperCase()}` })),
        models: [{ id: 'm', input_usd_per_mtok: 1, output_usd_per_mtok: 1 }],
      },
    ],
  },
  { KEY_A: 'ka', KEY_B: 'kb', KEY_C: 'kc' },
);
const supplier = catalogue.suppliers[0]!;
const rateLimited = () =>
  ApiError.fromProvider('rate_limit_exceeded', 429, 'slow down', { retryAfterSeconds: 120, details: { upstream_status: 429 } });

function pool(store: MemoryStore, now: { t: number }, events: CredentialEvent[]) {
  return new CredentialPool(
    store,
    (e) => events.push(e),
    () => catalogue.suppliers,
    {
      policy: { rateLimitedCooldownMs: 60_000, authFailureCooldownMs: 300_000 },
      now: () => now.t,
    },
  );
}

test('which failures are the credential’s: 429 and 401/403 from the supplier, not its outages', () => {
  assert.equal(credentialFailureKind(rateLimited()), 'rate_limited');
  assert.equal(credentialFailureKind(new ApiError('upstream_error', { details: { upstream_status: 401 } })), 'auth_failure');
  assert.equal(credentialFailureKind(new ApiError('upstream_error', { details: { upstream_status: 403 } })), 'auth_failure');
  assert.equal(credentialFailureKind(new ApiError('upstream_error', { details: { upstream_status: 500 } })), undefined);
  assert.equal(credentialFailureKind(new ApiError('provider_timeout')), undefined);
});

test('round-robin over the credentials in rotation; a sidelined one is skipped until its Retry-After passes', async () => {
  const store = new MemoryStore('pool-test:');
  onTestFinished(() => store.close());
  const now = { t: 1_000_000 };
  const events: CredentialEvent[] = [];
  const p = pool(store, now, events);
  const picks = (n: number) => Array.from({ length: n }, () => p.pick(supplier, new Set())!.name).join('');
  assert.equal(picks(6), 'abcabc');
  await p.recordFailure('pooled', 'b', 'rate_limited', rateLimited());
  assert.equal(picks(4), 'acac');
  // The supplier's Retry-After (120 s) is longer than the cool-down (60 s): it wins.
  assert.equal(events[0]!.sidelinedUntil!.getTime(), now.t + 120_000);
  now.t += 119_999;
  assert.ok(!picks(6).includes('b'));
  now.t += 1;
  assert.ok(picks(6).includes('b'));
  // Never one the request already tried; none left: undefined.
  assert.equal(p.pick(supplier, new Set(['a', 'b', 'c'])), undefined);
  assert.equal(p.hasUntried(supplier, new Set(['a', 'b'])), true);
});

test('all sidelined: the supplier counts as exhausted and the one back soonest is the last resort', async () => {
  const store = new MemoryStore('pool-test:');
  onTestFinished(() => store.close());
  const now = { t: 5_000_000 };
  const p = pool(store, now, []);
  await p.recordFailure('pooled', 'a', 'auth_failure', new ApiError('upstream_error', { details: { upstream_status: 401 } }));
  await p.recordFailure('pooled', 'b', 'rate_limited', ApiError.fromProvider('rate_limit_exceeded', 429, 'x'));
  assert.equal(p.exhaustedByName('pooled'), false);
  await p.recordFailure('pooled', 'c', 'auth_failure', new ApiError('upstream_error', { details: { upstream_status: 403 } }));
  assert.equal(p.exhaustedByName('pooled'), true);
  assert.equal(p.pick(supplier, new Set())!.name, 'b');
});

test('another replica learns of a sidelining; recovery is logged once however many replicas see it', async () => {
  const store = new MemoryStore('pool-test:');
  onTestFinished(() => store.close());
  const now = { t: 9_000_000 };
  const events: CredentialEvent[] = [];
  const first = pool(store, now, events);
  const second = pool(store, now, events);
  await first.start();
  await second.start();
  onTestFinished(async () => {
    await first.stop();
    await second.stop();
  });
  await first.recordFailure('pooled', 'a', 'rate_limited', ApiError.fromProvider('rate_limit_exceeded', 429, 'x'));
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(second.isSidelined('pooled', 'a'), true);
  // A replica started later loads it from the store.
  const third = pool(store, now, events);
  await third.load(catalogue.suppliers);
  assert.equal(third.isSidelined('pooled', 'a'), true);
  now.t += 60_001;
  await Promise.all([first.recordSuccess('pooled', 'a'), second.recordSuccess('pooled', 'a'), third.recordSuccess('pooled', 'a')]);
  assert.deepEqual(
    events.map((e) => e.kind),
    ['rate_limited', 'recovered'],
  );
});
