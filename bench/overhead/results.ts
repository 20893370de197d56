import type { LoadMeasurement } from '../shared/load.js';

/** One target's figures under the benchmark load. */
export type Measurement = LoadMeasurement;

/** Facts about the run printed above the table. */
export interface RunFacts {
  date: string;
  machine: string;
  store: string;
  duration: number;
  /** Seconds of warm-up load before each target's measurement. */
  warmup: number;
  connections: number;
}

const ratio = (a: number, b: number) => (b === 0 ? 'n/a' : (a / b).toFixed(2));

/**
 * Renders the overhead section of bench/RESULTS.md (run.ts writes it between its own markers,
 * keeping the other benchmarks' sections): the table and the ratios of the gateway (c) to (a) and (b).
 */
export function renderResults(m: readonly Measurement[], facts: RunFacts): string {
  // Targets by their letter (run.ts measures them in the order the VM's drift is least felt in).
  const target = (letter: string) => m.find((x) => x.name.startsWith(`(${letter})`));
  const [direct, bare, gateway, enforced, workers, cluster, clusterEnforced, appendOnly, again] = 'abcdefghi'.split('').map(target);
  const cpu = (x: Measurement) => (x.cpuMicrosPerRequest === undefined ? 'n/a' : x.cpuMicrosPerRequest.toFixed(0));
  const rows = m.map(
    (x) =>
      `| ${x.name} | ${x.requestsPerSecond.toFixed(0)} | ${x.p50Ms.toFixed(1)} | ${x.p99Ms.toFixed(1)} | ${cpu(x)} | ${x.total} | ${x.failed} |`,
  );
  /** A ratio row, when both targets ran; `cpuToo` false for a pair whose CPU columns measure different processes. */
  const ratioRow = (label: string, a: Measurement | undefined, b: Measurement | undefined, cpuToo = true) =>
    a && b
      ? [
          `| ${label} | ${ratio(a.requestsPerSecond, b.requestsPerSecond)} | ${ratio(a.p50Ms, b.p50Ms)} | ${ratio(a.p99Ms, b.p99Ms)} | ${
            cpuToo ? ratio(a.cpuMicrosPerRequest ?? 0, b.cpuMicrosPerRequest ?? 0) : 'n/a'
          } |`,
        ]
      : [];
  const ratios = [
    ...ratioRow('(i) the same gateway measured last / (c) — drift of the run', again, gateway),
    ...ratioRow('(c) gateway / (a) simulator', gateway, direct, false),
    ...ratioRow('(c) gateway / (b) bare proxy', gateway, bare),
    ...ratioRow('(d) enforced key / (c) plain key', enforced, gateway),
    ...ratioRow('(e) two workers / (c) one process', workers, gateway),
    ...ratioRow('(f) Redis Cluster / (c) one Redis', cluster, gateway),
    ...ratioRow('(g) enforced key / (f) plain key, on the cluster', clusterEnforced, cluster),
    ...ratioRow('(h) own writer process / (c) writer thread', appendOnly, gateway),
    ...ratioRow(
      '(h) gateway process alone / (b) bare proxy',
      appendOnly && { ...appendOnly, cpuMicrosPerRequest: appendOnly.cpuMicrosPerRequestByServer[0] },
      bare,
    ),
  ];
  const [appendingCpu = 0, writerCpu = 0] = appendOnly?.cpuMicrosPerRequestByServer ?? [];
  const appendOnlyNote = appendOnly
    ? `(h) is the gateway with its audit writer in a process of its own (\`SVC_AUDIT_WRITER=off\` and
\`npm run audit-writer\`, the chart's separate writer Deployment), so the serving process only
appends each record to the stream; its CPU column counts both processes (the gateway process
${appendingCpu.toFixed(0)} µs per request, the writer ${writerCpu.toFixed(0)}). It is measured after (d), a minute after (c).

`
    : '';
  return `## Overhead: gateway vs. simulator vs. bare proxy (\`npm run bench:overhead\`)

- Date: ${facts.date}
- Machine: ${facts.machine}
- Load: ${facts.connections} concurrent connections, ${facts.duration} s per target after a ${facts.warmup} s warm-up of the same load,
  non-streaming \`POST /v1/chat/completions\` (autocannon, in the benchmark process)
- Gateway: ${facts.store}, info-level request log; PostgreSQL is off the hot path (audit rows are written by a background writer)
- Every server is its own process on the same 2-core machine as the load generator, so the
  absolute numbers include CPU contention; compare the ratios.

| target | req/s | p50 ms | p99 ms | CPU µs/request (that process) | requests | failed |
|---|---:|---:|---:|---:|---:|---:|
${rows.join('\n')}

| ratio | throughput | p50 latency | p99 latency | CPU per request |
|---|---:|---:|---:|---:|
${ratios.join('\n')}

(d) is the cost of enforcement on the hot path: the same gateway and load, through a key with a
rate limit, a budget and a payer wallet, so every request runs the atomic enforcement script
before the supplier call and settles after it (plus its audit record, which (c) writes too).

(e) is the same gateway as two processes behind one port (\`SVC_WORKERS=2\`, node:cluster; its
CPU column counts the primary and both workers), on the same two cores that also run the load
generator and the simulator.

(f) and (g) are one gateway whose store is a Redis Cluster of three masters on loopback
(\`SVC_REDIS_CLUSTER\`; docs/architecture.md, "Store sharding"): the enforced key's reservation
and settlement then run on two shards at once (its own, its payer's).

${appendOnlyNote}(i) is (c) again in a fresh process, measured last: the first ratio row is how far this
shared VM's speed drifted during the run, so how far apart rows measured minutes apart may be
for no reason of their own. Ratios between rows far apart in time are only as good as that.

The CPU column is the server's own CPU time divided by the requests it served: for (b) and (c)
it is what proxying (b) or everything the gateway does (c) costs per request, without the
simulator's share; for (a) it is the simulator's cost. p50 has autocannon's 1 ms resolution.
`;
}
