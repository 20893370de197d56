import { describe, expect, it } from 'vitest';
import { cellText, csvLine } from './exports.js';

describe('report cells as text', () => {
  it('a tiny cost is its exact decimal, never an exponent; other values as they are', () => {
    expect(cellText(4e-8)).toBe('0.00000004');
    expect(cellText(0.00203255)).toBe('0.00203255');
    expect(cellText(3e-9)).toBe('0.000000003');
    expect(cellText(12)).toBe('12');
    expect(cellText(null)).toBe('');
    expect(cellText(true)).toBe('true');
    expect(csvLine(['2026-11-27', 'gpt-4o', 1, 0, 2, 0, 4e-8])).toBe('2026-11-27,gpt-4o,1,0,2,0,0.00000004\r\n');
  });
});
