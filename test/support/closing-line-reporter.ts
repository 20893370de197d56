// Prints one plain closing line after vitest's own summary, e.g. `tests: 512 passed, 0 failed, 1 skipped`,
// so that a CI log (and the tooling that reads it) shows at a glance how many tests ran.
import type { Reporter, TestModule } from 'vitest/node';

export default class ClosingLineReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<unknown>): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    for (const module of testModules) {
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') passed++;
        else if (state === 'failed') failed++;
        else skipped++;
      }
      // A file that failed to load or ended early has no tests to count, but it did fail.
      if (module.state() === 'failed' && [...module.children.allTests()].every((t) => t.result().state !== 'failed')) failed++;
    }
    failed += unhandledErrors.length;
    process.stdout.write(`\ntests: ${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}\n`);
  }
}
