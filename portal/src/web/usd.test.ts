import { expect, test } from 'vitest';
import { formatUsd } from './usd.js';

test('formatUsd shows the exact amount to the nano-dollar, trailing zeros dropped to at least cents, thousands grouped', () => {
  // The usage page's total of parts $0.002022 + … must not read "$0.01".
  expect(formatUsd(0.0132241)).toBe('$0.0132241');
  expect(formatUsd(0.002022)).toBe('$0.002022');
  expect(formatUsd(0.000001)).toBe('$0.000001');
  expect(formatUsd(0)).toBe('$0.00');
  expect(formatUsd(5)).toBe('$5.00');
  expect(formatUsd(12.5)).toBe('$12.50');
  expect(formatUsd(1.013)).toBe('$1.013');
  expect(formatUsd(1234.5678)).toBe('$1,234.5678');
  expect(formatUsd(999.999)).toBe('$999.999');
  expect(formatUsd(1_000)).toBe('$1,000.00');
  expect(formatUsd(999.9999999)).toBe('$999.9999999');
  expect(formatUsd(1_234_567.891)).toBe('$1,234,567.891');
  expect(formatUsd(-25_000)).toBe('-$25,000.00');
  expect(formatUsd(-0.5)).toBe('-$0.50');
  // Float noise below the nano-dollar is no amount, and never "-$0.00".
  expect(formatUsd(-1e-12)).toBe('$0.00');
  expect(formatUsd(1e-12)).toBe('$0.00');
  expect(formatUsd(0.1 + 0.2)).toBe('$0.30');
});

test('formatUsd never rounds a remaining budget or a balance to fewer decimals (up, in particular)', () => {
  // A key's remaining budget of $1.123456789 read "$1.123457"; a balance of $9.9998884 "$9.999888".
  expect(formatUsd(1.123456789)).toBe('$1.123456789');
  expect(formatUsd(9.9998884)).toBe('$9.9998884');
  expect(formatUsd(999_999.999999999)).toBe('$999,999.999999999');
  // Tiny amounts show their digits, never $0.00 nor an exponent.
  expect(formatUsd(0.0000001)).toBe('$0.0000001');
  expect(formatUsd(0.000000123)).toBe('$0.000000123');
  expect(formatUsd(0.000000001)).toBe('$0.000000001');
  expect(formatUsd(0.0000007)).toBe('$0.0000007');
  expect(formatUsd(0.0000015)).toBe('$0.0000015');
  expect(formatUsd(-0.0000001)).toBe('-$0.0000001');
});
