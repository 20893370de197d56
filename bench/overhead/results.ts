/** One target's figures under the benchmark load. */
export interface Measurement {
  name: string;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  failed: number;
  total: number;
}

/** Facts about the run printed above the table. */
export interface RunFacts {
  date: string;
  machine: string;
  store: string;
  duration: number;
  connections: number;
}

const ratio = (a: number, b: number) => (b === 0 ? 'n/a' : (a / b).toFixed(2));

/** Renders bench/RESULTS.md: the table and the ratios of the gateway (c) to (a) and (b). */
export function renderResults(m: readonly Measurement[], facts: RunFacts): string {
  const [direct, bare, gateway] = m as [Measurement, Measurement, Measurement];
  const rows = m.map((x) => `| ${x.name} | ${x.requestsPerSecond.toFixed(0)} | ${x.p50Ms.toFixed(1)} | ${x.p99Ms.toFixed(1)} | ${x.total} | ${x.failed} |`);
  return `# Benchmark results

## Overhead: gateway vs. simulator vs. bare proxy (\`npm run bench:overhead\`)

- Date: ${facts.date}
- Machine: ${facts.machine}
- Load: ${facts.connections} concurrent connections, ${facts.duration} s per target after a 2 s warm-up,
  non-streaming \`POST /v1/chat/completions\` (autocannon, in the benchmark process)
- Gateway: embedded PostgreSQL (PGlite, not on the hot path), ${facts.store}, info-level request log
- Every server is its own process on the same 2-core machine as the load generator, so the
  absolute numbers include CPU contention; compare the ratios.

| target | req/s | p50 ms | p99 ms | requests | failed |
|---|---:|---:|---:|---:|---:|
${rows.join('\n')}

| ratio | throughput | p50 latency | p99 latency |
|---|---:|---:|---:|
| (c) gateway / (a) simulator | ${ratio(gateway.requestsPerSecond, direct.requestsPerSecond)} | ${ratio(gateway.p50Ms, direct.p50Ms)} | ${ratio(gateway.p99Ms, direct.p99Ms)} |
| (c) gateway / (b) bare proxy | ${ratio(gateway.requestsPerSecond, bare.requestsPerSecond)} | ${ratio(gateway.p50Ms, bare.p50Ms)} | ${ratio(gateway.p99Ms, bare.p99Ms)} |
`;
}
