// Prints one plain closing line after vitest's own summary, e.g. `tests: 512 passed, 0 failed, 1 skipped`,
// so that a CI log (and the tooling that reads it) shows at a glance how many tests ran — preceded
// by the slowest files, because CI runs close to its time budget and the log should say where the
// minutes went.
import type { Reporter, TestModule } from 'vitest/node';

const slowestShown = 12;

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
    process.stdout.write(slowestFiles(testModules));
    process.stdout.write(`\ntests: ${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}\n`);
  }
}

/** The files whose tests and hooks took longest, one per line (seconds, then the path). */
function slowestFiles(testModules: ReadonlyArray<TestModule>): string {
  if (testModules.length < 2) return '';
  const timed = testModules
    .map((module) => ({ path: module.relativeModuleId, seconds: module.diagnostic().duration / 1000 }))
    .sort((a, b) => b.seconds - a.seconds)
    .slice(0, slowestShown);
  return `\nslowest files:\n${timed.map((file) => `  ${file.seconds.toFixed(1).padStart(6)} s  ${file.path}`).join('\n')}\n`;
}
