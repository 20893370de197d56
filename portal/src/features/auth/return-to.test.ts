import { describe, expect, it } from 'vitest';
import { safeReturnTo } from './return-to.js';

describe('safeReturnTo', () => {
  it('keeps a local path', () => expect(safeReturnTo('/dashboard?tab=keys')).toBe('/dashboard?tab=keys'));
  it.each(['https://evil.example', '//evil.example', '/\\evil.example', 'dashboard', '/a\nb', undefined])('refuses %s', (v) =>
    expect(safeReturnTo(v)).toBeUndefined(),
  );
});
