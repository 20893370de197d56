import { describe, expect, it } from 'vitest';
import { sameOriginVerdict } from './same-origin.js';

const origin = 'https://portal.example.com';
describe('sameOriginVerdict', () => {
  it('trusts Origin first', () => {
    expect(sameOriginVerdict({ origin, referer: 'https://evil.example/' }, origin)).toBe(true);
    expect(sameOriginVerdict({ origin: 'https://evil.example', referer: `${origin}/login` }, origin)).toBe(false);
    expect(sameOriginVerdict({ origin: 'null' }, origin)).toBe(false);
  });
  it('falls back to Referer, then Sec-Fetch-Site', () => {
    expect(sameOriginVerdict({ referer: `${origin}/signup` }, origin)).toBe(true);
    expect(sameOriginVerdict({ referer: 'https://portal.example.com.evil.example/' }, origin)).toBe(false);
    expect(sameOriginVerdict({ referer: 'not a url' }, origin)).toBe(false);
    expect(sameOriginVerdict({ fetchSite: 'same-origin' }, origin)).toBe(true);
    expect(sameOriginVerdict({ fetchSite: 'cross-site' }, origin)).toBe(false);
    expect(sameOriginVerdict({ fetchSite: 'same-site' }, origin)).toBe(false);
  });
  it('has no verdict without any of the three headers', () => {
    expect(sameOriginVerdict({}, origin)).toBeUndefined();
  });
});
