import { describe, expect, it } from 'vitest';
import { hashPassword, verifyPassword } from './passwords.js';

describe('passwords', () => {
  it('hashes with argon2id and verifies only the right password', async () => {
    const h = await hashPassword('correct horse 7 battery');
    expect(h).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    expect(await verifyPassword(h, 'correct horse 7 battery')).toBe(true);
    expect(await verifyPassword(h, 'wrong horse 7 battery')).toBe(false);
  });
  it('says no for an account without a password, and for a malformed hash', async () => {
    expect(await verifyPassword(null, 'anything at all 1')).toBe(false);
    expect(await verifyPassword('not-a-hash', 'anything at all 1')).toBe(false);
  });
});
