import { expect, test } from 'vitest';
import { formatUsd } from './usd.js';

test('formatUsd keeps a total as precise as its parts (up to six decimals), at least cents, cents and grouped thousands from $1,000', () => {
  // The usage page's total of parts $0.002022 + … must not read "$0.01".
  expect(formatUsd(0.0132241)).toBe('$0.013224');
  expect(formatUsd(0.002022)).toBe('$0.002022');
  expect(formatUsd(0.000001)).toBe('$0.000001');
  expect(formatUsd(0)).toBe('$0.00');
  expect(formatUsd(12.5)).toBe('$12.50');
  expect(formatUsd(1.013)).toBe('$1.013');
  expect(formatUsd(1234.5678)).toBe('$1,234.57');
  expect(formatUsd(999.999)).toBe('$999.999');
  expect(formatUsd(1_000)).toBe('$1,000.00');
  expect(formatUsd(999.9999999)).toBe('$1,000.00');
  expect(formatUsd(1_234_567.891)).toBe('$1,234,567.89');
  expect(formatUsd(-25_000)).toBe('-$25,000.00');
  expect(formatUsd(-0.5)).toBe('-$0.50');
  // Float noise below the nano-dollar is no amount, and never "-$0.00".
  expect(formatUsd(-1e-12)).toBe('$0.00');
  expect(formatUsd(1e-12)).toBe('$0.00');
});

test('formatUsd shows an amount too small for six decimals with its exact digits, never as $0.00 nor with an exponent', () => {
  // A key's budget of $0.0000001 read "$0.00 of $0.00", as a budget of nothing does.
  expect(formatUsd(0.0000001)).toBe('$0.0000001');
  expect(formatUsd(0.000000123)).toBe('$0.000000123');
  expect(formatUsd(0.000000001)).toBe('$0.000000001');
  // Just under a millionth too: it showed as $0.000001, rounded up, while smaller ones were exact.
  expect(formatUsd(0.0000007)).toBe('$0.0000007');
  expect(formatUsd(0.0000015)).toBe('$0.000002');
  expect(formatUsd(-0.0000001)).toBe('-$0.0000001');
});
