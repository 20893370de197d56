import assert from 'node:assert/strict';
import { describe, test } from 'vitest';
import { nanoPerUsd, toNano, toNanoCeil } from './usage.js';

// Issue 13 finding 10: money is counted in integer nano-USD, exactly as the audit log writes it.
describe('nano-USD', () => {
  test('toNano is the audit log amount (toFixed(9)) as an integer, without float drift', () => {
    assert.equal(toNano(0.00001055), 10_550);
    assert.equal(toNano(0.1 + 0.2), 300_000_000);
    assert.equal(toNano(-1.5), -1_500_000_000);
    assert.equal(toNano(1234.000000001), 1_234_000_000_001);
    for (const usd of [0.000000149, 0.0000106, 12.345678912]) assert.equal(toNano(usd), Number(usd.toFixed(9).replace('.', '')));
  });

  test('a reservation is never below the cost it covers', () => {
    for (const usd of [0.0000276, 1e-10, 0.1 + 0.2, 3.0000000001])
      assert.ok(toNanoCeil(usd) >= usd * nanoPerUsd - 1e-6 && toNanoCeil(usd) >= toNano(usd), String(usd));
  });
});
