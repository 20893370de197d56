import { test } from 'vitest';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const deployables = ['gateway', 'operator', 'portal'] as const;

function sourceFiles(dir: string): string[] {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
  return entries.flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : sourceFiles(path);
    return /\.(ts|mts|js|mjs)$/.test(e.name) ? [path] : [];
  });
}

/** Relative import specifiers of a file: static imports, re-exports and dynamic import(). */
function importsOf(text: string): string[] {
  const found: string[] = [];
  const patterns = [/\bfrom\s+['"]([^'"]+)['"]/g, /\bimport\s+['"]([^'"]+)['"]/g, /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g];
  for (const pattern of patterns) for (const m of text.matchAll(pattern)) found.push(m[1]!);
  return found.filter((s) => s.startsWith('.'));
}

/** Tests and test helpers, which stay out of the build: they may also use test/ (its support and simulator). */
const isTestCode = (file: string) => /(\.test|\.fixture|\/testing|\/test-fixtures)\.ts$/.test(file);

/**
 * Import-rule violations in one file: core/ imports only core/, a deployable only itself and
 * core/ — so core imports no deployable and deployables never import each other; their tests
 * and test helpers may use test/ as well.
 */
function violationsIn(file: string, text: string): string[] {
  const owner = relative(root, file).split('/')[0]!;
  const allowed = new Set([owner, 'core', ...(isTestCode(file) ? ['test'] : [])]);
  return importsOf(text)
    .filter((specifier) => !allowed.has(relative(root, resolve(dirname(file), specifier)).split('/')[0]!))
    .map((specifier) => `${relative(root, file)} imports ${specifier}`);
}

test('gateway, operator and portal import only core/ (and themselves, and test/ in tests), never each other', () => {
  const files = deployables.flatMap((d) => sourceFiles(join(root, d)));
  assert.ok(
    files.some((f) => f.includes('/gateway/')),
    'the gateway sources were found',
  );
  assert.deepEqual(
    files.flatMap((f) => violationsIn(f, readFileSync(f, 'utf8'))),
    [],
  );
});

test('core/ imports only core/ (and test/ in tests): no deployable', () => {
  const files = sourceFiles(join(root, 'core'));
  assert.ok(
    files.some((f) => f.endsWith('/core/errors/index.ts')),
    'the core sources were found',
  );
  assert.deepEqual(
    files.flatMap((f) => violationsIn(f, readFileSync(f, 'utf8'))),
    [],
  );
});

test('the rule check catches a deployable imported by core/', () => {
  const text =
    "import { x } from '../../gateway/src/app.js';\nimport { y } from '../errors/index.js';\nexport { waitFor } from '../../test/support/wait-for.js';";
  assert.deepEqual(violationsIn(join(root, 'core/keys/fake.ts'), text), [
    'core/keys/fake.ts imports ../../gateway/src/app.js',
    'core/keys/fake.ts imports ../../test/support/wait-for.js',
  ]);
  assert.deepEqual(violationsIn(join(root, 'core/keys/testing.ts'), text), ['core/keys/testing.ts imports ../../gateway/src/app.js']);
});

test('the rule check catches a cross-deployable import', () => {
  const text =
    "import { x } from '../../portal/src/app.js';\nexport * from '../../core/errors/index.js';\nconst m = await import('../../operator/src/main.js');";
  assert.deepEqual(importsOf(text), ['../../portal/src/app.js', '../../core/errors/index.js', '../../operator/src/main.js']);
  assert.deepEqual(violationsIn(join(root, 'gateway/src/fake.ts'), text), [
    'gateway/src/fake.ts imports ../../portal/src/app.js',
    'gateway/src/fake.ts imports ../../operator/src/main.js',
  ]);
});
