// Money at the processor is integer US cents; money in wallets is integer nano-USD
// (core/wallets). Every conversion and the fee policy live here, in integers only, so a top-up
// of $12.34 is 1234 cents at the processor and exactly 12_340_000_000 nano-USD in the ledger.
import { nanoPerUsd } from '../budget/usage.js';

/** Nano-USD in one cent. */
export const nanoPerCent = nanoPerUsd / 100;

/** The processor's currency for every payment (lower case, as it expects). */
export const currency = 'usd';

/** Cents → nano-USD (exact). */
export function centsToNano(cents: number): number {
  return cents * nanoPerCent;
}

/** Nano-USD → USD number for JSON (up to 9 decimals, as the rest of the API). */
export function nanoToUsd(nano: number): number {
  return nano / nanoPerUsd;
}

/** Cents → USD number for JSON. */
export function centsToUsd(cents: number): number {
  return cents / 100;
}

/**
 * A USD amount typed by a person or sent as JSON → whole cents, or undefined when it is not a
 * finite amount with at most two decimals (12.345 is refused, never rounded).
 */
export function usdToCents(amount: number | string): number | undefined {
  const text = typeof amount === 'number' ? (Number.isFinite(amount) ? String(amount) : '') : amount.trim();
  const match = /^(\d{1,9})(?:\.(\d{1,2}))?$/.exec(text);
  if (!match) return undefined;
  return Number(match[1]) * 100 + Number((match[2] ?? '').padEnd(2, '0'));
}

/** Cents as `$1,234.50`. */
export function formatCents(cents: number): string {
  const sign = cents < 0 ? '-' : '';
  const abs = Math.abs(cents);
  const whole = Math.floor(abs / 100).toLocaleString('en-US');
  return `${sign}$${whole}.${String(abs % 100).padStart(2, '0')}`;
}

/**
 * How much the processor collects for a wallet credit: the card fee is grossed up onto the
 * payer (percentage `feeBps` of the total plus `feeFixedCents`), so that after the processor
 * takes its fee the platform holds at least the credited amount. Both 0: no fee is added.
 */
export interface FeePolicy {
  feeBps: number;
  feeFixedCents: number;
}

/** The breakdown shown before the redirect and sent to the processor. */
export interface Collection {
  /** Wallet credit (net), in cents. */
  creditCents: number;
  /** Fee added on top, in cents. */
  feeCents: number;
  /** What the card is charged: credit + fee. */
  totalCents: number;
}

/** total = ceil((credit + fixed) / (1 − bps/10 000)), in integers. */
export function collectionFor(creditCents: number, policy: FeePolicy): Collection {
  if (policy.feeBps === 0 && policy.feeFixedCents === 0) return { creditCents, feeCents: 0, totalCents: creditCents };
  const numerator = (creditCents + policy.feeFixedCents) * 10_000;
  const denominator = 10_000 - policy.feeBps;
  const totalCents = Math.ceil(numerator / denominator);
  return { creditCents, feeCents: totalCents - creditCents, totalCents };
}

/** The policy in words, for pages and the processor-config answer. */
export function describeFeePolicy(policy: FeePolicy): string {
  if (policy.feeBps === 0 && policy.feeFixedCents === 0) return 'No card fee is added: the amount you choose is what your card is charged.';
  const percent = (policy.feeBps / 100).toFixed(2).replace(/\.?0+$/, '');
  return (
    `The card processing fee (${percent}% + ${formatCents(policy.feeFixedCents)}) is added on top, ` +
    'so the full amount you choose arrives in the wallet it tops up.'
  );
}
