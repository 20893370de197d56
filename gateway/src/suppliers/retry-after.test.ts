import { expect, test } from 'vitest';
import { maxRetryAfterSeconds, retryAfterSeconds } from './retry-after.js';

test('Retry-After is read as seconds or an HTTP date, never negative and never past the bound', () => {
  expect(retryAfterSeconds({ 'retry-after': '7' })).toBe(7);
  expect(retryAfterSeconds({ 'retry-after': '-3' })).toBe(0);
  expect(retryAfterSeconds({ 'retry-after': 'soon' })).toBeUndefined();
  expect(retryAfterSeconds({})).toBeUndefined();
  // One answer cannot take a supplier out for years, on every replica.
  expect(retryAfterSeconds({ 'retry-after': '999999999' })).toBe(maxRetryAfterSeconds);
  expect(retryAfterSeconds({ 'retry-after': new Date(Date.now() + 86_400_000).toUTCString() })).toBe(maxRetryAfterSeconds);
  const inTwoMinutes = retryAfterSeconds({ 'retry-after': new Date(Date.now() + 120_000).toUTCString() })!;
  expect(inTwoMinutes).toBeGreaterThan(100);
  expect(inTwoMinutes).toBeLessThanOrEqual(121);
});
