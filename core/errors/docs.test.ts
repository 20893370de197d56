// Keeps docs/errors.md equal to what the catalogue renders, as fastify does for its error codes.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'vitest';
import { errorCatalogue, isErrorCode } from './catalogue.js';
import { foreignCodes } from './foreign-codes.js';
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

  it('lists every code the gateway produces outside the catalogue, with its status', () => {
    const markdown = readFileSync(docsPath, 'utf8');
    for (const [code, entry] of Object.entries(foreignCodes)) {
      assert.ok(!isErrorCode(code), `${code} is in the catalogue too`);
      assert.ok(markdown.includes(`| \`${code}\` | ${entry.status} |`), code);
    }
  });

  it("has no code of the gateway's own making outside the catalogue but through ApiError.foreign", () => {
    // fromProvider carries a supplier's code on; a literal code there would be one the gateway
    // makes itself, and belongs in foreign-codes.ts (documented) instead.
    const root = fileURLToPath(new URL('../../', import.meta.url));
    const literals: string[] = [];
    const scan = (dir: string): void => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) {
          if (entry.name !== 'node_modules') scan(path);
        } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')) {
          for (const match of readFileSync(path, 'utf8').matchAll(/fromProvider\(\s*['"`]([^'"`]+)['"`]/g))
            literals.push(`${path.slice(root.length)}: ${match[1]}`);
        }
      }
    };
    for (const dir of ['gateway/src', 'core', 'portal/src', 'operator']) if (existsSync(join(root, dir))) scan(join(root, dir));
    assert.deepEqual(literals, []);
  });
});
