// How the portal shows money to people: one formatter, so a total and its parts agree on every page.
import { exactUsdText } from '../../../core/budget/usage.js';

/**
 * USD for people, precise enough that a total and its parts agree on the page: up to six
 * decimals (one request to a small model costs millionths of a dollar, and "$0.00" would hide
 * that it was counted), at least cents, trailing zeros dropped — $0.013224, $12.50, $0.00. From
 * $1,000 on, cents, and thousands grouped: $1,234.57. An amount under a millionth shows its exact
 * digits to the nano-dollar (whether or not it would round up to $0.000001), the finest a budget is kept: a key's budget of $0.0000001
 * read "$0.00", the same as a budget of nothing.
 */
export function formatUsd(usd: number): string {
  const magnitude = Math.abs(usd);
  const six = magnitude.toFixed(6);
  // Compared after rounding: $999.9999999 shows as $1,000.00.
  const text =
    Number(six) >= 1_000
      ? groupThousands(magnitude.toFixed(2))
      : magnitude < 0.000001
        ? belowMillionth(magnitude)
        : six.replace(/0{1,4}$/, '');
  return `${usd < 0 && text !== '0.00' ? '-' : ''}$${text}`;
}

/** An amount under a millionth: its nano-dollar digits, or 0.00 when it has none (float noise). */
function belowMillionth(magnitude: number): string {
  const exact = exactUsdText(magnitude);
  return exact === '0' ? '0.00' : exact;
}

/** "1234567.89" → "1,234,567.89": the whole dollars grouped by three, the cents as they are. */
function groupThousands(fixed: string): string {
  const [whole = '', cents] = fixed.split('.');
  const grouped = whole.replace(/\B(?=(\d{3})+$)/g, ',');
  return cents === undefined ? grouped : `${grouped}.${cents}`;
}
