import type { LoadMeasurement } from '../shared/load.js';

/** One target's figures under the benchmark load. */
export type Measurement = LoadMeasurement;

/** Facts about the run printed above the table. */
export interface RunFacts {
  date: string;
  machine: string;
  store: string;
  duration: number;
  connections: number;
}

const ratio = (a: number, b: number) => (b === 0 ? 'n/a' : (a / b).toFixed(2));

/**
 * Renders the overhead section of bench/RESULTS.md (run.ts writes it between its own markers,
 * keeping the other benchmarks' sections): the table and the ratios of the gateway (c) to (a) and (b).
 */
export function renderResults(m: readonly Measurement[], facts: RunFacts): string {
  const [direct, bare, gateway, enforced, workers] = m as [
    Measurement,
    Measurement,
    Measurement,
    Measurement | undefined,
    Measurement | undefined,
  ];
  const cpu = (x: Measurement) => (x.cpuMicrosPerRequest === undefined ? 'n/a' : x.cpuMicrosPerRequest.toFixed(0));
  const rows = m.map(
    (x) =>
      `| ${x.name} | ${x.requestsPerSecond.toFixed(0)} | ${x.p50Ms.toFixed(1)} | ${x.p99Ms.toFixed(1)} | ${cpu(x)} | ${x.total} | ${x.failed} |`,
  );
  return `## Overhead: gateway vs. simulator vs. bare proxy (\`npm run bench:overhead\`)

- Date: ${facts.date}
- Machine: ${facts.machine}
- Load: ${facts.connections} concurrent connections, ${facts.duration} s per target after a 2 s warm-up,
  non-streaming \`POST /v1/chat/completions\` (autocannon, in the benchmark process)
- Gateway: ${facts.store}, info-level request log; PostgreSQL is off the hot path (audit rows are written by a background writer)
- Every server is its own process on the same 2-core machine as the load generator, so the
  absolute numbers include CPU contention; compare the ratios.

| target | req/s | p50 ms | p99 ms | CPU µs/request (that process) | requests | failed |
|---|---:|---:|---:|---:|---:|---:|
${rows.join('\n')}

| ratio | throughput | p50 latency | p99 latency | CPU per request |
|---|---:|---:|---:|---:|
| (c) gateway / (a) simulator | ${ratio(gateway.requestsPerSecond, direct.requestsPerSecond)} | ${ratio(gateway.p50Ms, direct.p50Ms)} | ${ratio(gateway.p99Ms, direct.p99Ms)} | n/a |
| (c) gateway / (b) bare proxy | ${ratio(gateway.requestsPerSecond, bare.requestsPerSecond)} | ${ratio(gateway.p50Ms, bare.p50Ms)} | ${ratio(gateway.p99Ms, bare.p99Ms)} | ${ratio(gateway.cpuMicrosPerRequest ?? 0, bare.cpuMicrosPerRequest ?? 0)} |
${
  enforced
    ? `| (d) enforced key / (c) plain key | ${ratio(enforced.requestsPerSecond, gateway.requestsPerSecond)} | ${ratio(enforced.p50Ms, gateway.p50Ms)} | ${ratio(enforced.p99Ms, gateway.p99Ms)} | ${ratio(enforced.cpuMicrosPerRequest ?? 0, gateway.cpuMicrosPerRequest ?? 0)} |
`
    : ''
}${
    workers
      ? `| (e) two workers / (c) one process | ${ratio(workers.requestsPerSecond, gateway.requestsPerSecond)} | ${ratio(workers.p50Ms, gateway.p50Ms)} | ${ratio(workers.p99Ms, gateway.p99Ms)} | ${ratio(workers.cpuMicrosPerRequest ?? 0, gateway.cpuMicrosPerRequest ?? 0)} |
`
      : ''
  }
(d) is the cost of enforcement on the hot path: the same gateway and load, through a key with a
rate limit, a budget and a payer wallet, so every request runs the atomic enforcement script
before the supplier call and settles after it (plus its audit record, which (c) writes too).

(e) is the same gateway as two processes behind one port (\`SVC_WORKERS=2\`, node:cluster; its
CPU column counts the primary and both workers), on the same two cores that also run the load
generator and the simulator.

The CPU column is the server's own CPU time divided by the requests it served: for (b) and (c)
it is what proxying (b) or everything the gateway does (c) costs per request, without the
simulator's share; for (a) it is the simulator's cost. p50 has autocannon's 1 ms resolution.
`;
}
