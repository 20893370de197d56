// Runs every *.test.ts in the repository with node's own test runner (tsx for TypeScript).
// Node 20's --test takes no globs, so the files are collected here. Arguments, when given,
// filter the file list by substring: `npm test -- core/store`.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const skipDirs = new Set(['node_modules', 'dist', '.data', '.git']);

function collect(dir) {
  const found = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) {
      if (!skipDirs.has(entry.name) && !entry.name.startsWith('.')) found.push(...collect(join(dir, entry.name)));
    } else if (entry.name.endsWith('.test.ts')) {
      found.push(relative(root, join(dir, entry.name)));
    }
  }
  return found;
}

const filters = process.argv.slice(2);
const files = collect(root)
  .filter((f) => filters.length === 0 || filters.some((p) => f.includes(p)))
  .sort();
if (files.length === 0) {
  console.error(`no test files match ${filters.join(' ')}`);
  process.exit(1);
}
console.log(
  `running ${files.length} test files; PostgreSQL: ${process.env.DATABASE_URL ? 'DATABASE_URL' : 'embedded PGlite'}, ` +
    `store: ${process.env.REDIS_URL ? 'REDIS_URL' : 'in-process memory'}`,
);
const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-reporter=spec', `--test-concurrency=${process.env.TEST_CONCURRENCY ?? 2}`, ...files],
  { cwd: root, stdio: 'inherit' },
);
process.exit(result.status ?? 1);
