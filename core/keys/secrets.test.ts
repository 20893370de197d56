import { test } from 'vitest';
import assert from 'node:assert/strict';
import { credentialKindOf, generateKeyId, generateSecret, hashesEqual, hashSecret, randomBase62, secretHint } from './secrets.js';

test('secrets carry their kind prefix and enough randomness', () => {
  const managed = generateSecret('managed');
  assert.match(managed, /^svc-sk-[0-9A-Za-z]{40}$/);
  assert.match(generateSecret('token'), /^svc_[0-9A-Za-z]{40}$/);
  assert.equal(credentialKindOf(managed), 'managed');
  assert.equal(credentialKindOf(generateSecret('token')), 'token');
  assert.equal(credentialKindOf(generateSecret('admin')), 'admin');
  assert.equal(credentialKindOf('sk-openai-style'), undefined);
  assert.notEqual(generateSecret('managed'), managed);
  assert.match(generateKeyId(), /^key_[0-9A-Za-z]{20}$/);
  const chars = new Set(randomBase62(5000));
  assert.equal(chars.size, 62);
});

test('hashing is keyed by the pepper and compared in constant time', () => {
  const secret = generateSecret('managed');
  const h1 = hashSecret(secret, 'pepper-one-pepper-one-pepper-one!');
  assert.match(h1, /^[0-9a-f]{64}$/);
  assert.equal(h1, hashSecret(secret, 'pepper-one-pepper-one-pepper-one!'));
  assert.notEqual(h1, hashSecret(secret, 'pepper-two-pepper-two-pepper-two!'));
  assert.ok(hashesEqual(h1, h1));
  assert.ok(!hashesEqual(h1, hashSecret('other', 'pepper-one-pepper-one-pepper-one!')));
  assert.ok(!hashesEqual(h1, ''));
  assert.ok(!hashesEqual('', ''));
});

test('the hint shows the prefix and last four characters only', () => {
  const secret = generateSecret('managed');
  assert.equal(secretHint(secret), `svc-sk-…${secret.slice(-4)}`);
});
