import { describe, expect, it } from 'vitest';
import { spendChart } from './chart.js';

const tickLabels = (svg: string) => [...svg.matchAll(/<text[^>]*text-anchor="end" font-size="11"[^>]*>([^<]*)<\/text>/g)].map((m) => m[1]);

describe('the spend chart', () => {
  it('labels its axis in one format, with the decimals the half tick needs', () => {
    expect(tickLabels(spendChart([{ day: '2026-11-01', usd: 0.8 }]))).toEqual(['$0.00', '$0.50', '$1.00']);
    expect(tickLabels(spendChart([{ day: '2026-11-01', usd: 0.04 }]))).toEqual(['$0.000', '$0.025', '$0.050']);
    expect(tickLabels(spendChart([{ day: '2026-11-01', usd: 0.0003 }]))).toEqual(['$0.00000', '$0.00025', '$0.00050']);
    expect(tickLabels(spendChart([{ day: '2026-11-01', usd: 150 }]))).toEqual(['$0', '$100', '$200']);
    expect(tickLabels(spendChart([]))).toEqual(['$0.00', '$0.50', '$1.00']);
  });

  it('leaves room at the left for its longest label', () => {
    const svg = spendChart([{ day: '2026-11-01', usd: 0.0003 }]);
    const x = Number(/<text x="([\d.]+)"[^>]*text-anchor="end" font-size="11"/.exec(svg)![1]);
    // The label ends at x and runs ~7 px a character to its left: it must not start before 0.
    expect(x - 7 * '$0.00050'.length).toBeGreaterThanOrEqual(0);
  });
});
