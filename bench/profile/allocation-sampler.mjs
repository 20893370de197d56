// Preloaded into a benchmark server (`--import`) by `BENCH_PROFILE=alloc npx tsx bench/profile/run.ts`:
// V8's sampling heap profiler, keeping the samples of objects the garbage collector has already
// freed, so the profile shows every allocation site in proportion to the bytes it allocates —
// the churn the scavenger and its helper threads pay for — not only what is still alive.
// SIGUSR2 writes the samples so far to ALLOCATION_PROFILE_OUT.<n> (n = 1, 2, …) and starts
// afresh: the benchmark sends one when the warm-up ends and one when the measured load ends, so
// file 2 holds the measured load alone.
import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector';
import { isMainThread } from 'node:worker_threads';

const out = process.env.ALLOCATION_PROFILE_OUT;
if (!out) throw new Error('allocation-sampler: ALLOCATION_PROFILE_OUT is not set');
// Preloads run in worker threads too (the audit writer's): the serving thread is the one sampled.
if (isMainThread) await sample(out);

async function sample(file) {
  const session = new Session();
  session.connect();
  const post = (method, params) =>
    new Promise((resolve, reject) => session.post(method, params, (error, result) => (error ? reject(error) : resolve(result))));
  const start = () =>
    post('HeapProfiler.startSampling', {
      samplingInterval: 4096,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });

  await post('HeapProfiler.enable');
  await start();
  let written = 0;
  process.on('SIGUSR2', () => {
    const n = ++written;
    // Sampling starts again before the profile is written, so the next window misses nothing.
    post('HeapProfiler.stopSampling')
      .then(async ({ profile }) => {
        await start();
        await writeFile(`${file}.${n}`, JSON.stringify(profile));
      })
      .catch((error) => console.error('allocation-sampler:', error));
  });
}
