import assert from 'node:assert/strict';
import { describe, test } from 'vitest';
import { isWholeNanoUsd, nanoPerUsd, toNano, toNanoCeil } from './usage.js';

// Issue 13 finding 10: money is counted in integer nano-USD, exactly as the audit log writes it.
describe('nano-USD', () => {
  test('toNano is the audit log amount (toFixed(9)) as an integer, without float drift', () => {
    assert.equal(toNano(0.00001055), 10_550);
    assert.equal(toNano(0.1 + 0.2), 300_000_000);
    assert.equal(toNano(-1.5), -1_500_000_000);
    assert.equal(toNano(1234.000000001), 1_234_000_000_001);
    for (const usd of [0.000000149, 0.0000106, 12.345678912]) assert.equal(toNano(usd), Number(usd.toFixed(9).replace('.', '')));
  });

  test('the fast path agrees with toFixed(9) on every kind of amount, halves included', () => {
    const byString = (usd: number) => Math.sign(usd) * Number(Math.abs(usd).toFixed(9).replace('.', ''));
    let seed = 20261126;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const amounts: number[] = [0, 1e-9, 5e-10, 1.5e-9, 2.5e-9, 0.0000000005, 9999.9999999995, 10_000, 123_456.789, -0.0000000025];
    // Around the fast path's bound (2^20 USD) and the million-USD caps and balances it is for.
    amounts.push(1_000_000, 999_999.9999999995, 1_000_000.0000000005, 1_048_575.9999999995, 1_048_576, 1_048_576.5, -1_000_000.000000001);
    for (let i = 0; i < 20_000; i++) {
      const scale = 10 ** Math.floor(random() * 17 - 9);
      amounts.push(random() * scale, -random() * scale, Math.round(random() * 1e6) / 1e9 + 5e-10);
    }
    for (const usd of amounts) assert.equal(toNano(usd) || 0, byString(usd) || 0, String(usd));
  });

  test('a reservation is never below the cost it covers', () => {
    for (const usd of [0.0000276, 1e-10, 0.1 + 0.2, 3.0000000001])
      assert.ok(toNanoCeil(usd) >= usd * nanoPerUsd - 1e-6 && toNanoCeil(usd) >= toNano(usd), String(usd));
  });

  test('isWholeNanoUsd: at most nine decimal places as written, at any magnitude', () => {
    for (const ok of [0, 1e-9, 1.5e-8, 0.1, 12.345678912, 999_999.123456789, 1e9, 1e21]) assert.equal(isWholeNanoUsd(ok), true, String(ok));
    // Above 2^53 nano-USD a conversion would round: the text decides (JSON.parse of eight decimals, as a client sends it).
    assert.equal(isWholeNanoUsd(JSON.parse('871576655.77936515') as number), true);
    for (const refused of [1e-12, 0.0000000015, 1.0000000001, 123.4567890123])
      assert.equal(isWholeNanoUsd(refused), false, String(refused));
  });
});
