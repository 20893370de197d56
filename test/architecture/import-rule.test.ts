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

/** Import-rule violations in one file: imports reaching another top-level folder than its own or core/. */
function violationsIn(file: string, text: string): string[] {
  const owner = relative(root, file).split('/')[0]!;
  return importsOf(text)
    .filter((specifier) => {
      const target = relative(root, resolve(dirname(file), specifier)).split('/')[0]!;
      return target !== owner && target !== 'core';
    })
    .map((specifier) => `${relative(root, file)} imports ${specifier}`);
}

test('gateway, operator and portal import only core/ (and themselves), never each other', () => {
  const files = deployables.flatMap((d) => sourceFiles(join(root, d)));
  assert.ok(files.some((f) => f.includes('/gateway/')), 'the gateway sources were found');
  assert.deepEqual(files.flatMap((f) => violationsIn(f, readFileSync(f, 'utf8'))), []);
});

test('the rule check catches a cross-deployable import', () => {
  const text = "import { x } from '../../portal/src/app.js';\nexport * from '../../core/errors/index.js';\nconst m = await import('../../operator/src/main.js');";
  assert.deepEqual(importsOf(text), ['../../portal/src/app.js', '../../core/errors/index.js', '../../operator/src/main.js']);
  assert.deepEqual(violationsIn(join(root, 'gateway/src/fake.ts'), text), [
    'gateway/src/fake.ts imports ../../portal/src/app.js',
    'gateway/src/fake.ts imports ../../operator/src/main.js',
  ]);
});
