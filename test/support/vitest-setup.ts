// Loaded by vitest in every test file's process before the file runs (vitest.config.ts setupFiles).
//
// The per-file ceiling: vitest bounds each test and hook, but not a file as a whole. Each file runs
// in its own child process (pool: forks, isolate), so a timer armed here ends only that file's
// process. It is unref'd: it never keeps a finished file alive, and only a file still running after
// SVC_TEST_FILE_TIMEOUT_MS (10 minutes by default) ever sees it fire. Vitest then reports the file as
// failed ("worker exited unexpectedly"), and the run ends with a failure instead of hanging.
import { basename } from 'node:path';

const fileTimeoutMs = Number(process.env.SVC_TEST_FILE_TIMEOUT_MS ?? 600_000);
const timer = setTimeout(() => {
  const file = process.env.VITEST_POOL_ID ? `worker ${process.env.VITEST_POOL_ID}` : basename(process.argv[1] ?? 'test file');
  process.stderr.write(`\n[vitest-setup] a test file ran longer than ${fileTimeoutMs} ms in ${file}; ending it\n`);
  process.exit(124);
}, fileTimeoutMs);
timer.unref();
