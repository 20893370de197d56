// The one test runner for every suite: unit tests beside the code (core/, gateway/src, operator/src,
// portal/src) and cross-deployable, process and browser suites under test/.
//
// Timeouts are ceilings, never assertions: a test that waits on a condition polls for it (see
// test/support/wait-for.ts) and only a hung test ever reaches these numbers. The per-file ceiling
// is armed by test/support/vitest-setup.ts, because vitest has no per-file timeout of its own.
import { defineConfig } from 'vitest/config';
import { coverageFloors } from './test/coverage-floors.js';

const ci = Boolean(process.env.CI);

export default defineConfig({
  test: {
    include: ['{core,gateway,operator,portal,test,bench,deploy}/**/*.test.ts'],
    exclude: ['**/node_modules/**', '**/dist/**', '**/.data/**'],
    // One child process per file: a file that leaks a socket or a timer cannot hold the run open,
    // and native modules (PGlite's wasm, undici) get a clean process each.
    pool: 'forks',
    isolate: true,
    maxWorkers: Number(process.env.TEST_CONCURRENCY ?? 2),
    fileParallelism: true,
    testTimeout: 60_000,
    hookTimeout: 90_000,
    teardownTimeout: 30_000,
    setupFiles: ['./test/support/vitest-setup.ts'],
    // With REDIS_URL, a three-master Redis Cluster on loopback for the store-sharding suites (test/cluster/).
    globalSetup: ['./test/support/redis-cluster-global.ts'],
    // A failing test is retried never: a flaky test is a bug to fix, not to hide.
    retry: 0,
    reporters: ci ? ['verbose', './test/support/closing-line-reporter.ts'] : ['default', './test/support/closing-line-reporter.ts'],
    coverage: {
      provider: 'v8',
      include: ['core/**/*.ts', 'gateway/src/**/*.ts', 'operator/src/**/*.ts', 'portal/src/**/*.ts'],
      // Process and thread entry points (wiring only) run in the child processes and worker threads
      // of the process suites (test/gateway/process.test.ts and others), which the in-process V8
      // coverage cannot see; what they wire is covered where it is defined.
      exclude: [
        '**/*.test.ts',
        '**/*.fixture.ts',
        '**/testing.ts',
        '**/testing/**',
        '**/src/main.ts',
        'gateway/src/audit-writer-main.ts',
        'gateway/src/audit/writer-thread-worker.ts',
        'gateway/src/tokens/count-worker.ts',
        '**/*.fixture.mjs',
        'gateway/src/audit/ts-worker-boot.mjs',
        'portal/src/worker.ts',
      ],
      reporter: ['text-summary', 'json-summary'],
      reportsDirectory: '.data/coverage',
      thresholds: coverageFloors,
    },
  },
});
