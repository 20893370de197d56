// Loaded by vitest in every test file's process before the file runs (vitest.config.ts setupFiles).
//
// The per-file ceiling: vitest bounds each test and hook, but not a file as a whole. Each file runs
// in its own child process (pool: forks, isolate), so a timer armed here can end only that file's
// process. It is unref'd: it never keeps a finished file alive, and only a file still running after
// SVC_TEST_FILE_TIMEOUT_MS (10 minutes by default) ever sees it fire. It kills the process outright
// (vitest intercepts process.exit in its workers and would let a hung file go on); vitest then
// reports the file as failed, and the run ends with a failure instead of hanging.
import { expect } from 'vitest';

const fileTimeoutMs = Number(process.env.SVC_TEST_FILE_TIMEOUT_MS ?? 600_000);
const timer = setTimeout(() => {
  const file = expect.getState().testPath ?? 'this test file';
  process.stderr.write(`\n[vitest-setup] ${file} ran longer than ${fileTimeoutMs} ms (SVC_TEST_FILE_TIMEOUT_MS); ending it\n`);
  process.kill(process.pid, 'SIGKILL');
}, fileTimeoutMs);
timer.unref();
