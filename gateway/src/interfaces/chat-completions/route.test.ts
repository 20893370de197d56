import { expect, test } from 'vitest';
import { outputTokenBound } from './route.js';

test('the output reserved is the larger of max_completion_tokens and max_tokens, whichever a supplier reads', () => {
  expect(outputTokenBound({ max_completion_tokens: 1, max_tokens: 4000 })).toBe(4000);
  expect(outputTokenBound({ max_completion_tokens: 4000, max_tokens: 1 })).toBe(4000);
  expect(outputTokenBound({ max_tokens: 20 })).toBe(20);
  expect(outputTokenBound({ max_completion_tokens: 20, max_tokens: null })).toBe(20);
  expect(outputTokenBound({})).toBeUndefined();
});
