import { expect, test } from 'vitest';
import { z } from 'zod';
import { plainMessage } from './validation.js';

/** The portal's message for each issue of parsing `value` with `schema`. */
const messages = (schema: z.ZodType, value: unknown) => schema.safeParse(value).error?.issues.map(plainMessage);

test("zod's default wording is said as what the field must be; a schema's own message stays", () => {
  expect(messages(z.object({ a: z.number() }), { a: 'x' })).toEqual(['must be a number']);
  expect(messages(z.object({ a: z.string() }), {})).toEqual(['is required']);
  expect(messages(z.object({ a: z.number().int() }), { a: 1.5 })).toEqual(['must be a whole number']);
  expect(messages(z.string().max(3), 'abcd')).toEqual(['must be at most 3 characters']);
  expect(messages(z.number().min(2), 1)).toEqual(['must be at least 2']);
  expect(messages(z.number().positive(), 0)).toEqual(['must be more than 0']);
  expect(messages(z.array(z.string()).max(1), ['a', 'b'])).toEqual(['must be at most 1 items']);
  expect(messages(z.enum(['day', 'hour']), 'week')).toEqual(['must be one of day, hour']);
  expect(messages(z.literal('yes'), 'no')).toEqual(['must be "yes"']);
  expect(messages(z.email(), 'nope')).toEqual(['must be a valid email']);
  expect(messages(z.strictObject({ a: z.string() }), { a: 'x', b: 1 })).toEqual(['has a field it does not take: b']);
  // A union without a message of its own says what the branch that took the value's type said.
  const amount = z.union([z.number(), z.string().regex(/^\d+$/, 'must be digits')]);
  expect(messages(amount, 'x1')).toEqual(['must be digits']);
  expect(messages(amount, true)).toEqual(['is not a value this field takes']);
  // Schemas' own messages are kept as written.
  expect(messages(z.string().regex(/^a/, 'must start with a'), 'b')).toEqual(['must start with a']);
  expect(
    messages(
      z.string().refine(() => false),
      'b',
    ),
  ).toEqual(['is not a value this field takes']);
});
