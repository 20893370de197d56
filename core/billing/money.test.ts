import { describe, expect, it } from 'vitest';
import { centsToNano, collectionFor, describeFeePolicy, formatCents, nanoToUsd, usdToCents } from './money.js';

describe('money', () => {
  it('reads typed and JSON amounts as whole cents, refusing anything finer or stranger', () => {
    expect(usdToCents(12.34)).toBe(1234);
    expect(usdToCents('25.5')).toBe(2550);
    expect(usdToCents(' 7 ')).toBe(700);
    for (const bad of [12.345, '1e3', '-5', 'ten', '', Number.NaN, Number.POSITIVE_INFINITY, '1,000', '0x10'])
      expect(usdToCents(bad), String(bad)).toBeUndefined();
  });

  it('converts cents to nano-USD and nano-USD to USD exactly', () => {
    expect(centsToNano(1234)).toBe(12_340_000_000);
    expect(nanoToUsd(12_340_000_000)).toBe(12.34);
  });

  it('formats cents with sign and thousands separators', () => {
    expect(formatCents(123_450)).toBe('$1,234.50');
    expect(formatCents(-5)).toBe('-$0.05');
    expect(formatCents(0)).toBe('$0.00');
  });

  it('grosses the card fee up so the net credit arrives, or adds nothing when the fee is absorbed', () => {
    // (10.00 + 0.30) / (1 − 0.029) = 10.6076… → 10.61.
    expect(collectionFor(1000, { feeBps: 290, feeFixedCents: 30 })).toEqual({ creditCents: 1000, feeCents: 61, totalCents: 1061 });
    expect(collectionFor(1000, { feeBps: 0, feeFixedCents: 0 })).toEqual({ creditCents: 1000, feeCents: 0, totalCents: 1000 });
    // After the processor keeps its fee from the total, at least the credit remains.
    for (const credit of [500, 999, 12_345, 1_000_000]) {
      const { totalCents } = collectionFor(credit, { feeBps: 290, feeFixedCents: 30 });
      expect(totalCents - Math.round((totalCents * 290) / 10_000) - 30).toBeGreaterThanOrEqual(credit);
    }
  });

  it('describes the policy in words', () => {
    expect(describeFeePolicy({ feeBps: 290, feeFixedCents: 30 })).toContain('2.9% + $0.30');
    expect(describeFeePolicy({ feeBps: 300, feeFixedCents: 0 })).toContain('3% + $0.00');
    expect(describeFeePolicy({ feeBps: 0, feeFixedCents: 0 })).toMatch(/No card fee/);
  });
});
