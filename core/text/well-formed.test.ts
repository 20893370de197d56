import { expect, test } from 'vitest';
import { hasDirectionControls, hasVisibleCharacter, plainName } from './well-formed.js';

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

test('hasVisibleCharacter: zero-width, format and blank characters alone show nothing', () => {
  for (const text of ['', '   ', '\u200B\u200B', '\u2060\uFEFF', '\u3164', '\u2800', '\u00AD', '\uFE0F\uFE0F', '\u034F', '\u0301'])
    expect(hasVisibleCharacter(text), JSON.stringify(text)).toBe(false);
  for (const text of ['a', ' \u200Bé', 'نيو', '\u{1F469}\u200D\u{1F4BB}']) expect(hasVisibleCharacter(text), text).toBe(true);
  // An identity provider's name claim of blanks is no name.
  expect(plainName('\u200B\u3164', 120)).toBeUndefined();
});
