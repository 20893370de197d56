// How the portal shows money to people: one formatter, so a total and its parts agree on every page.

/**
 * USD for people, precise enough that a total and its parts agree on the page: up to six
 * decimals (one request to a small model costs millionths of a dollar, and "$0.00" would hide
 * that it was counted), at least cents, trailing zeros dropped — $0.013224, $12.50, $0.00. From
 * $1,000 on, cents.
 */
export function formatUsd(usd: number): string {
  const magnitude = Math.abs(usd);
  const text = magnitude >= 1_000 ? magnitude.toFixed(2) : magnitude.toFixed(6).replace(/0{1,4}$/, '');
  return `${usd < 0 && text !== '0.00' ? '-' : ''}$${text}`;
}
