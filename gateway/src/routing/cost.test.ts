import { expect, test } from 'vitest';
import { worstCaseUsd } from '../enforcement/enforce.js';
import { testRoute } from '../translate/shared/test-fixtures.js';
import { boundedUsage, costUsd } from './cost.js';

// The fixture's model: input $1, cache reads $0.10, cache writes $1.25, output $2 per million tokens.
const route = testRoute('anthropic');

test('prompt-cache writes are charged at their own price, reads at theirs, the rest as plain input', () => {
  // 1,000,000 input tokens: 600,000 plain, 300,000 read from the cache, 100,000 written to it.
  const usage = { inputTokens: 1_000_000, outputTokens: 1_000_000, cachedInputTokens: 300_000, cacheWriteInputTokens: 100_000 };
  expect(costUsd(route.model, usage)).toBe(0.6 + 0.03 + 0.125 + 2);
  // Without writes (OpenAI-protocol suppliers report none) nothing changes.
  expect(costUsd(route.model, { inputTokens: 1_000_000, outputTokens: 0, cachedInputTokens: 300_000 })).toBe(0.7 + 0.03);
});

test('writes stay within the input a supplier can have used, apart from what was read', () => {
  const { usage, capped } = boundedUsage(
    route.model,
    { inputTokens: 100, outputTokens: 10, cachedInputTokens: 80, cacheWriteInputTokens: 50 },
    { inputCap: 100 },
  );
  expect(capped).toBe(true);
  expect(usage).toEqual({ inputTokens: 100, outputTokens: 10, cachedInputTokens: 80, cacheWriteInputTokens: 20 });
});

test('a reservation prices every input token as a cache write when writes cost more than plain input', () => {
  // 1,000 input tokens at most, 1,000 output: 1,000 × $1.25 + 1,000 × $2 per million.
  expect(worstCaseUsd([route], 1_000, 1_000, 4096)).toBeCloseTo(0.00325, 12);
});
