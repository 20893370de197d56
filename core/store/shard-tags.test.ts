import { test } from 'vitest';
import assert from 'node:assert/strict';
import { keySlot, shardTag, tagOf, untagged } from './shard-tags.js';
import { rateWindowKey, budgetWindow, spendGroupCapKey, spendGroupWindow } from '../budget/index.js';
import { walletKey } from '../wallets/index.js';
import { keyCacheKey, keyGenerationKey } from '../keys/index.js';

test('slots are the ones Redis Cluster computes (CLUSTER KEYSLOT)', () => {
  // Reference values from the Redis Cluster specification and `redis-cli cluster keyslot`.
  assert.equal(keySlot('123456789'), 12739);
  assert.equal(keySlot('foo'), 12182);
  assert.equal(keySlot('{user1000}.following'), keySlot('{user1000}.followers'));
  assert.equal(keySlot('foo{}{bar}'), keySlot('foo{}{bar}'), 'empty braces: the whole key is hashed');
  assert.notEqual(keySlot('foo{}{bar}'), keySlot('bar'));
  assert.equal(keySlot('foo{{bar}}zap'), keySlot('{bar'));
});

test('a tag is the first non-empty {...}; untagged drops only its braces', () => {
  assert.equal(tagOf('rate:{key_1}'), 'key_1');
  assert.equal(tagOf('plain'), 'plain');
  assert.equal(tagOf('open{only'), 'open{only');
  assert.equal(untagged('rate:{key_1}'), 'rate:key_1');
  assert.equal(untagged('spend:{org:5}:m:2026-11'), 'spend:org:5:m:2026-11');
  assert.equal(untagged('a{}b'), 'a{}b');
  assert.equal(untagged('plain'), 'plain');
  assert.equal(shardTag('org:5'), '{org:5}');
});

test("an entity's keys share a slot; single-Redis names are those of releases before cluster support", () => {
  const now = new Date('2026-11-26T12:00:00Z');
  const org = { scope: 'organisation' as const, id: 5 };
  assert.equal(keySlot(spendGroupWindow(org, now).counterKey), keySlot(spendGroupCapKey(org)), 'group counter and cap');
  const user = { scope: 'user' as const, id: 3 };
  assert.equal(
    keySlot(walletKey('user:3')),
    keySlot(spendGroupWindow(user, now).counterKey),
    "a user's wallet sits with their monthly counter",
  );
  assert.equal(keySlot(walletKey('org:5')), keySlot(spendGroupCapKey(org)), 'a payer org:5 (Management API) sits with organisation 5');
  assert.equal(
    keySlot(rateWindowKey('key_1')),
    keySlot(budgetWindow('key_1', 'monthly', now).counterKey),
    "a key's rate window and budget",
  );
  assert.equal(keySlot(keyCacheKey('h')), keySlot(keyGenerationKey('h')), 'cached key and its change counter');
  // Unchanged on a single Redis: the upgrade renames no counter, mirror, rate window or cached key.
  assert.equal(untagged(rateWindowKey('key_1')), 'rate:key_1');
  assert.equal(untagged(budgetWindow('key_1', 'monthly', now).counterKey), 'spend:key_1:m:2026-11');
  assert.equal(untagged(spendGroupWindow(org, now).counterKey), 'spend:org:5:m:2026-11');
  assert.equal(untagged(walletKey('org:5')), 'funds:org:5');
  assert.equal(untagged(keyCacheKey('h')), 'key:h');
});
