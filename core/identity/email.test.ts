import { expect, test } from 'vitest';
import { emailAddress, emailLengthProblem } from './email.js';

test('an address within RFC 5321 lengths is accepted, trimmed', () => {
  expect(emailAddress.parse('  ada@example.com ')).toBe('ada@example.com');
  const local64 = `${'a'.repeat(64)}@x.com`;
  expect(emailAddress.parse(local64)).toBe(local64);
  const whole254 = `${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(57)}.com`;
  expect(whole254).toHaveLength(254);
  expect(emailAddress.safeParse(whole254).success).toBe(true);
});

test('an address over RFC 5321 lengths is refused: 64 before the @, 254 in all', () => {
  expect(emailLengthProblem(`${'a'.repeat(65)}@x.com`)).toMatch(/at most 64 characters before the @/);
  expect(emailAddress.safeParse(`${'a'.repeat(300)}@x.com`).success).toBe(false);
  expect(emailAddress.safeParse(`${'a'.repeat(65)}@x.com`).success).toBe(false);
  const long = `a@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(63)}.${'e'.repeat(60)}.com`;
  expect(long).toHaveLength(258);
  expect(emailLengthProblem(long)).toMatch(/at most 254/);
  expect(emailAddress.safeParse(long).success).toBe(false);
  // Counted in octets: 64 two-byte characters are 128.
  expect(emailLengthProblem(`${'é'.repeat(40)}@x.com`)).toBeDefined();
  expect(emailAddress.safeParse('not an address').success).toBe(false);
});
