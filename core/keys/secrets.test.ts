import { createHmac } from 'node:crypto';
import { expect, test } from 'vitest';
import { hashSecret, secretDigest } from './secrets.js';

test('the digest is the HMAC-SHA256 of the secret keyed by the pepper as UTF-8, so stored hashes stay valid', () => {
  for (const pepper of ['p'.repeat(32), 'pépper-ü-€-🔑']) {
    const expected = createHmac('sha256', pepper).update('svc-sk-abc€', 'utf8').digest();
    expect(secretDigest('svc-sk-abc€', pepper)).toEqual(expected);
    expect(hashSecret('svc-sk-abc€', pepper)).toBe(expected.toString('hex'));
  }
  // Two peppers in one process (tests, a rotation) each keep their own key.
  expect(hashSecret('s', 'a'.repeat(32))).not.toBe(hashSecret('s', 'b'.repeat(32)));
});
