import { test } from 'vitest';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import {
  credentialKindOf,
  digestsEqual,
  generateKeyId,
  generateSecret,
  hashSecret,
  randomBase62,
  secretDigest,
  secretHint,
} from './secrets.js';

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
  // The stored form is HMAC-SHA-256 under the pepper, hex; the digest is the same bytes.
  assert.equal(h1, createHmac('sha256', 'pepper-one-pepper-one-pepper-one!').update(secret).digest('hex'));
  const d1 = secretDigest(secret, 'pepper-one-pepper-one-pepper-one!');
  assert.equal(d1.toString('hex'), h1);
  assert.ok(digestsEqual(d1, Buffer.from(h1, 'hex')));
  assert.ok(!digestsEqual(d1, secretDigest('other', 'pepper-one-pepper-one-pepper-one!')));
  assert.ok(!digestsEqual(d1, Buffer.alloc(0)));
  assert.ok(!digestsEqual(Buffer.alloc(0), Buffer.alloc(0)));
});

test('the hint shows the prefix and last four characters only', () => {
  const secret = generateSecret('managed');
  assert.equal(secretHint(secret), `svc-sk-…${secret.slice(-4)}`);
});

test('the digest is the HMAC-SHA256 of the secret keyed by the pepper as UTF-8, whatever the pepper holds', () => {
  // The pepper is imported as a key object once (secrets.ts): the digests stay those of the string-keyed HMAC.
  for (const pepper of ['p'.repeat(32), 'pépper-ü-€-🔑']) {
    const expected = createHmac('sha256', pepper).update('svc-sk-abc€', 'utf8').digest();
    assert.deepEqual(secretDigest('svc-sk-abc€', pepper), expected);
    assert.equal(hashSecret('svc-sk-abc€', pepper), expected.toString('hex'));
  }
});
