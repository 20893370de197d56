// Keeps docs/errors.md equal to what the catalogue renders, as fastify does for its error codes.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { describe, it } from 'vitest';
import { errorCatalogue } from './catalogue.js';
import { renderErrorsMarkdown } from './render-docs.js';

const docsPath = new URL('../../docs/errors.md', import.meta.url);

describe('docs/errors.md', () => {
  it('is the rendered catalogue', () => {
    assert.ok(existsSync(docsPath), 'docs/errors.md is missing: run npm run docs:errors');
    const actual = readFileSync(docsPath, 'utf8').split('\n');
    const expected = renderErrorsMarkdown().split('\n');
    // Report the first differing line instead of dumping two 40 kB strings.
    const line = expected.findIndex((text, index) => actual[index] !== text);
    const differs = line >= 0 || actual.length !== expected.length;
    const at = line >= 0 ? line : Math.min(actual.length, expected.length);
    assert.ok(
      !differs,
      `docs/errors.md is out of date at line ${at + 1}: run npm run docs:errors\n  file:     ${actual[at]}\n  rendered: ${expected[at]}`,
    );
  });

  it('lists every code with its status', () => {
    const markdown = existsSync(docsPath) ? readFileSync(docsPath, 'utf8') : '';
    for (const definition of Object.values(errorCatalogue)) {
      assert.ok(markdown.includes(`| \`${definition.code}\` | ${definition.status} |`), definition.code);
    }
  });
});
