// `npm test`: type-check, then run every suite with vitest (vitest.config.ts).
//
//   npm test                     all suites; on CI (CI set) or with SVC_COVERAGE=1, with coverage and its floors
//                                (SVC_COVERAGE=0 turns coverage off, also on CI)
//   npm test -- core/store       only the files whose path contains one of the arguments (no coverage floors)
//   npm test -- -t "revoke"      any other vitest argument is passed through
//   SVC_TYPECHECK=0 npm test     the suites without the type-check first (CI's second pass)
//
// Which PostgreSQL and store the suites use comes from the environment, as for the deployables:
// DATABASE_URL and REDIS_URL for the real services, neither for the embedded defaults (PGlite, in-process).
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const args = process.argv.slice(2);
const filtered = args.some((a) => !a.startsWith('-'));
const coverage = !filtered && process.env.SVC_COVERAGE !== '0' && (Boolean(process.env.CI) || process.env.SVC_COVERAGE === '1');

function run(command, commandArgs) {
  const result = spawnSync(command, commandArgs, { cwd: root, stdio: 'inherit' });
  if (result.error) throw result.error;
  return result.status ?? 1;
}

console.log(
  `node ${process.version}; PostgreSQL: ${process.env.DATABASE_URL ? 'DATABASE_URL' : 'embedded PGlite'}, ` +
    `store: ${process.env.REDIS_URL ? 'REDIS_URL' : 'in-process memory'}${coverage ? '; with coverage' : ''}`,
);
const bin = (name) => fileURLToPath(new URL(`../node_modules/.bin/${name}`, import.meta.url));
// SVC_TYPECHECK=0 skips the type-check: .ci/run's second pass runs the same tree its first pass checked.
if (process.env.SVC_TYPECHECK !== '0') {
  const typecheck = run(bin('tsc'), ['--noEmit', '-p', 'tsconfig.json']);
  if (typecheck !== 0) process.exit(typecheck);
}
process.exit(run(bin('vitest'), ['run', ...(coverage ? ['--coverage'] : []), ...args]));
