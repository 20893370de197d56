// How the portal shows money to people: one formatter, so a total and its parts agree on every page.

/**
 * USD for people, exactly as it is kept: money is counted in nano-dollars (nine decimals), and a
 * page shows every one of them that is not a trailing zero, with at least cents — $1.123456789,
 * $9.9998884, $0.013224, $12.50, $5.00, $0.0000001. Whole dollars are grouped by thousands:
 * $1,234.5678. Nothing is rounded to fewer decimals: a key's remaining budget of $1.123456789 read
 * "$1.123457" (more than is left), a balance of $9.9998884 "$9.999888". Amounts finer than a
 * nano-dollar (float noise of a sum) are rounded to the nano-dollar, the finest the platform keeps.
 */
export function formatUsd(usd: number): string {
  const [whole = '0', fraction = ''] = Math.abs(usd).toFixed(9).split('.');
  const text = `${groupThousands(whole)}.${fraction.replace(/0+$/, '').padEnd(2, '0')}`;
  return `${usd < 0 && text !== '0.00' ? '-' : ''}$${text}`;
}

/** "1234567" → "1,234,567": whole dollars grouped by three. */
function groupThousands(whole: string): string {
  return whole.replace(/\B(?=(\d{3})+$)/g, ',');
}
