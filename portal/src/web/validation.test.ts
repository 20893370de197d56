import { expect, test } from 'vitest';
import { z } from 'zod';
import { inPlainWords } from './validation.js';

/** The portal's message for each issue of parsing `value` with `schema`. */
const messages = (schema: z.ZodType, value: unknown) => schema.safeParse(value, inPlainWords).error?.issues.map((i) => i.message);

test("zod's default wording is said as what the field must be; a schema's own message stays", () => {
  expect(messages(z.object({ a: z.number() }), { a: 'x' })).toEqual(['must be a number']);
  expect(messages(z.object({ a: z.string() }), {})).toEqual(['is required']);
  expect(messages(z.object({ a: z.number().int() }), { a: 1.5 })).toEqual(['must be a whole number']);
  expect(messages(z.string().max(3), 'abcd')).toEqual(['must be at most 3 characters']);
  expect(messages(z.string().max(1), 'ab')).toEqual(['must be at most 1 character']);
  expect(messages(z.string().min(1), '')).toEqual(['must not be empty']);
  expect(messages(z.number().min(2), 1)).toEqual(['must be at least 2']);
  expect(messages(z.number().max(1_000_000), 2_000_000)).toEqual(['must be at most 1000000']);
  expect(messages(z.number().positive(), 0)).toEqual(['must be more than 0']);
  expect(messages(z.array(z.string()).max(1), ['a', 'b'])).toEqual(['must be at most 1 item']);
  expect(messages(z.enum(['day', 'hour']), 'week')).toEqual(['must be one of day, hour']);
  expect(messages(z.literal('yes'), 'no')).toEqual(['must be "yes"']);
  expect(messages(z.email(), 'nope')).toEqual(['must be a valid email']);
  expect(messages(z.string().regex(/^[a-z]+$/), 'A1')).toEqual(['must match the pattern /^[a-z]+$/']);
  expect(messages(z.strictObject({ a: z.string() }), { a: 'x', b: 1 })).toEqual(['has a field it does not take: b']);
  // A union of which several branches take the value's type says what the first of them said.
  const amount = z.union([z.number(), z.string().regex(/^\d+$/, 'must be digits'), z.string().email('must be an email')]);
  expect(messages(amount, 'x1')).toEqual(['must be digits']);
  expect(messages(amount, true)).toEqual(['is not a value this field takes']);
  // Schemas' own messages are kept as written, whatever their first word.
  expect(messages(z.string().regex(/^a/, 'Invalid start: use a'), 'b')).toEqual(['Invalid start: use a']);
  expect(
    messages(
      z.string().refine(() => false),
      'b',
    ),
  ).toEqual(['is not a value this field takes']);
});

test('a union with a "left empty" branch names the other branch’s miss, never that the value must be ""', () => {
  // As the forms' optional whole numbers are written: a number or digits, piped to an integer in range, or ''.
  const whole = z
    .union([z.number(), z.string().regex(/^\d+$/, 'must be a whole number').transform(Number)])
    .pipe(z.number().int().min(1).max(366));
  const optional = z.union([whole, z.literal('').transform(() => undefined)]);
  expect(messages(optional, 1.5)).toEqual(['must be a whole number']);
  expect(messages(optional, 400)).toEqual(['must be at most 366']);
  expect(messages(optional, 'x')).toEqual(['must be a whole number']);
});
