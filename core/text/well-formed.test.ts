import { expect, test } from 'vitest';
import { hasDirectionControls, plainName } from './well-formed.js';

test('direction controls are the embeddings, overrides and isolates; right-to-left letters are not', () => {
  for (const c of ['\u202A', '\u202B', '\u202C', '\u202D', '\u202E', '\u2066', '\u2067', '\u2068', '\u2069'])
    expect(hasDirectionControls(`a${c}b`), c.codePointAt(0)!.toString(16)).toBe(true);
  expect(hasDirectionControls('מפתח ראשי نيو \u200F')).toBe(false);
});

test('a name from another system is cleaned to show, not refused', () => {
  expect(plainName('  Emoji \u202Enimda\u0000 ', 120)).toBe('Emoji nimda');
  expect(plainName('a\uD800b', 120)).toBe('a\uFFFDb');
  expect(plainName('\u202E \u2066', 120)).toBeUndefined();
  expect(plainName('😀'.repeat(200), 120)).toBe('😀'.repeat(120));
});
