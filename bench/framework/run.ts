// Why the gateway is built on fastify + undici: a minimal proxy on that stack against one on
// express + http-proxy, both forwarding non-streaming chat completions to the supplier
// simulator under the same load (bench/shared/load.ts). Prints a table for docs/architecture.md.
// Needs BENCH_DEPS (see proxies.mjs). Run: BENCH_DEPS=/tmp/bench-deps npx tsx bench/framework/run.ts
import { measureLoad, type LoadMeasurement } from '../shared/load.js';
import { startProcess, startSimulator, stopProcess } from '../shared/start-process.js';

const simPort = 18190;
const proxyPort = 18196;
const load = { duration: Number(process.env.BENCH_SECONDS ?? 10), connections: 32 };
const rounds = Number(process.env.BENCH_ROUNDS ?? 2);

async function measure(stack: 'fastify' | 'express'): Promise<LoadMeasurement> {
  const proxy = await startProcess(
    `${stack} proxy`,
    ['bench/framework/proxies.mjs', stack],
    { UPSTREAM: `http://127.0.0.1:${simPort}`, PORT: String(proxyPort), BENCH_DEPS: process.env.BENCH_DEPS ?? '' },
    /listening/,
  );
  try {
    return await measureLoad(stack, `http://127.0.0.1:${proxyPort}/v1/chat/completions`, { authorization: 'Bearer bench' }, [proxy], load);
  } finally {
    await stopProcess(proxy);
  }
}

const simulator = await startSimulator(simPort, 'framework');
const results: LoadMeasurement[] = [];
try {
  // Alternating rounds, so drift of a shared machine affects both stacks alike.
  for (let round = 0; round < rounds; round++) for (const stack of ['fastify', 'express'] as const) results.push(await measure(stack));
} finally {
  await stopProcess(simulator);
}
console.log(`| stack | round | req/s | p50 ms | p99 ms | proxy CPU µs/request | failed |`);
console.log(`|---|---:|---:|---:|---:|---:|---:|`);
results.forEach((r, i) =>
  console.log(
    `| ${r.name} | ${Math.floor(i / 2) + 1} | ${r.requestsPerSecond.toFixed(0)} | ${r.p50Ms} | ${r.p99Ms} | ${r.cpuMicrosPerRequest?.toFixed(0) ?? '–'} | ${r.failed} |`,
  ),
);
