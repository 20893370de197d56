import { describe, expect, it } from 'vitest';
import { passwordWeakness } from './password-rule.js';

describe('passwordWeakness', () => {
  it('accepts a long password with letters and a digit', () => {
    expect(passwordWeakness('correct horse 7 battery', 'ana@example.com')).toBeUndefined();
  });
  it.each([
    ['short1!', 'at least 10'],
    ['onlyletterslong', 'letters and at least one digit'],
    ['1234567890123', 'letters and at least one digit'],
    ['aaaaaaaaaa1', 'too few different'],
    ['ana.lopez-2026', 'the name of your email address ("ana.lopez")'],
    ['ana.lopez@example.com', 'must not be your email address'],
  ])('refuses %s', (password, why) => {
    expect(passwordWeakness(password, 'ana.lopez@example.com')).toContain(why);
  });
});
