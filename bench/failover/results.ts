// Statistics and the markdown section of the failover benchmark (written into bench/RESULTS.md
// between `<!-- failover:start -->` and `<!-- failover:end -->` by run.ts).

/** Nearest-rank percentile; NaN for no values. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** A scenario measured request by request (sequential requests, one gateway per scenario). */
export interface TimedScenario {
  name: string;
  /** The gateway's store in this scenario. */
  store: string;
  trials: number;
  /** Requests that did not end as expected (wrong supplier, no failover, error status). */
  unexpected: number;
  /** Gateway-recorded selection time of the secondary attempt (ms), one per failover request. */
  selectionMs: number[];
  /** Primary failure response fully sent → secondary request received, measured by the suppliers (ms). */
  gapMs: number[];
  /** Client-visible latency (request sent → whole body read), ms. */
  clientMs: number[];
}

/** A scenario run with the circuit breaker active: how often the primary was still tried. */
export interface CircuitScenario {
  name: string;
  requests: number;
  primaryTried: number;
  primarySkipped: number;
  /** 1-based number of the first request that did not try the primary (undefined: none). */
  firstSkipped: number | undefined;
  note: string;
}

export interface RunFacts {
  date: string;
  machine: string;
  store: string;
  database: string;
  trials: number;
  warmup: number;
}

const us = (ms: number) => (Number.isFinite(ms) ? (ms * 1000).toFixed(0) : 'n/a');
const ms2 = (ms: number) => (Number.isFinite(ms) ? ms.toFixed(2) : 'n/a');
const signedMs = (ms: number) => (Number.isFinite(ms) ? `${ms >= 0 ? '+' : ''}${ms.toFixed(2)}` : 'n/a');

/** The section's markdown (without markers). */
export function renderFailoverSection(timed: readonly TimedScenario[], circuits: readonly CircuitScenario[], facts: RunFacts): string {
  const rows = timed.map((s) => {
    // The baseline: the normal row run on the same gateway (same store).
    const normal = timed.find((n) => n.store === s.store && n.selectionMs.length === 0);
    const baseP50 = normal ? percentile(normal.clientMs, 50) : Number.NaN;
    const baseP99 = normal ? percentile(normal.clientMs, 99) : Number.NaN;
    const failover = s.selectionMs.length > 0;
    const sel = failover
      ? `${us(percentile(s.selectionMs, 50))} / ${us(percentile(s.selectionMs, 99))} / ${us(Math.max(...s.selectionMs))}`
      : '—';
    const gap = failover ? `${us(percentile(s.gapMs, 50))} / ${us(percentile(s.gapMs, 99))}` : '—';
    const p50 = percentile(s.clientMs, 50);
    const p99 = percentile(s.clientMs, 99);
    const extra = failover ? `${signedMs(p50 - baseP50)} / ${signedMs(p99 - baseP99)}` : '—';
    return `| ${s.name} | ${s.store} | ${s.trials} | ${s.unexpected} | ${sel} | ${gap} | ${ms2(p50)} / ${ms2(p99)} | ${extra} |`;
  });
  const worstP99 = Math.max(...timed.filter((s) => s.selectionMs.length > 0).map((s) => percentile(s.selectionMs, 99)));
  const circuitRows = circuits.map(
    (c) => `| ${c.name} | ${c.requests} | ${c.primaryTried} | ${c.primarySkipped} | ${c.firstSkipped ?? '—'} | ${c.note} |`,
  );
  return `## Failover: selecting the next supplier (\`npx tsx bench/failover/run.ts\`)

- Date: ${facts.date}
- Machine: ${facts.machine}
- Command: \`npx tsx bench/failover/run.ts\` (env \`BENCH_FAILOVER_TRIALS\`, default 2000; \`DATABASE_URL\`, \`REDIS_URL\`)
- Setup: the gateway in the benchmark process (its pino request log captured in memory), ${facts.database},
  ${facts.store}; two OpenAI-protocol suppliers (primary priority 1, secondary priority 2), each a minimal
  node:http server in the same process that answers at once; sequential requests through an undici client, each
  with a new first user message (so session affinity never pins a request).
- The first table's scenarios run interleaved request by request on one gateway per store (normal, 503, 429, normal, …)
  after ${facts.warmup} warm-up rounds, so JIT, GC and machine drift fall on all of them alike; the circuit-breaker
  scenarios below each get a fresh gateway (fresh circuit state) and the same warm-up with a healthy primary.
- **Selection** is the \`selectionMs\` the gateway records for the secondary attempt (\`attempts[1]\` in the
  request log line): from the primary's failure being observed (its error response read and mapped) to the
  secondary attempt starting. **Gap** is measured outside the gateway by the two suppliers on the same clock:
  the primary's failure response fully written → the secondary's request headers received; it adds both
  transports, reading the error body, translating the request and writing it.
- Everything (gateway, both suppliers, client, and with PGlite the database) shares one Node thread, so the
  gateway's work after each response (settlement, audit writes) can delay the next request's steps: that shows in
  *gap* and *client*, much less in *selection*, which awaits nothing. Selection does include the synchronous part of
  the fire-and-forget failure count (\`SupplierHealth.recordFailure\` up to its first await): a few µs on the
  in-process store, an ioredis MULTI/EXEC build and socket write (~0.1 ms, more under load) on Redis.
- **Extra latency** is the client-visible p50 / p99 difference to the *normal* row (primary healthy), i.e. the
  failed round trip to the primary plus selection.
- "Circuit closed" rows set \`SVC_CIRCUIT_FAILURES\` to 10⁹ so every request tries the failing primary first;
  a 429 opens the circuit at once when it carries a \`Retry-After\` > 0, so the 429 row sends \`Retry-After: 0\`.

| scenario | store | requests | unexpected | selection p50 / p99 / max µs | gap p50 / p99 µs | client p50 / p99 ms | extra vs normal p50 / p99 ms |
|---|---|---:|---:|---:|---:|---:|---:|
${rows.join('\n')}

Worst selection p99: ${us(worstP99)} µs — the API promises < 200 ms (docs/spec-conformance.md 8.9), the aim is < 5 ms: ${
    worstP99 < 5 ? '**met**' : worstP99 < 200 ? '**spec met, aim missed**' : '**spec missed**'
  }.

With the circuit breaker at its defaults (3 failures within 30 s open the circuit for 30 s; a 429's
\`Retry-After\` opens it at once):

| scenario | requests | primary tried | primary skipped | first request that skipped it | note |
|---|---:|---:|---:|---:|---|
${circuitRows.join('\n')}
`;
}
