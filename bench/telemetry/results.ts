import { warmupSeconds, type LoadMeasurement } from '../shared/load.js';

/** One gateway run under load, with what its trace exporter delivered. */
export interface TelemetryRun extends LoadMeasurement {
  mode: 'off' | 'on';
  /** OTLP export requests and bytes the sink received during the run (tracing on only). */
  exports: number;
  exportBytes: number;
}

/** Facts about the run printed above the table. */
export interface TelemetryFacts {
  date: string;
  machine: string;
  store: string;
  duration: number;
  connections: number;
  rounds: number;
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
const ratio = (a: number, b: number) => (b === 0 ? 'n/a' : (a / b).toFixed(2));

/** Renders the telemetry section of bench/RESULTS.md (run.ts writes it between its markers). */
export function renderTelemetrySection(runs: readonly TelemetryRun[], facts: TelemetryFacts): string {
  const rows = runs.map((r) => {
    const cpu = r.cpuMicrosPerRequest === undefined ? 'n/a' : r.cpuMicrosPerRequest.toFixed(0);
    const exported = r.mode === 'on' ? `${r.exports} / ${r.total === 0 ? 'n/a' : (r.exportBytes / r.total) | 0} B` : '—';
    return `| ${r.name} | ${r.requestsPerSecond.toFixed(0)} | ${r.p50Ms.toFixed(1)} | ${r.p99Ms.toFixed(1)} | ${cpu} | ${r.total} | ${r.failed} | ${exported} |`;
  });
  const of = (mode: TelemetryRun['mode']) => runs.filter((r) => r.mode === mode);
  const avg = (mode: TelemetryRun['mode'], pick: (r: TelemetryRun) => number) => mean(of(mode).map(pick));
  const cpuOff = avg('off', (r) => r.cpuMicrosPerRequest ?? 0);
  const cpuOn = avg('on', (r) => r.cpuMicrosPerRequest ?? 0);
  return `## Telemetry: tracing exporter off vs. on (\`npm run bench:telemetry\`)

- Date: ${facts.date}
- Machine: ${facts.machine}
- Load: ${facts.connections} concurrent connections, ${facts.duration} s per run after a ${warmupSeconds} s warm-up, ${facts.rounds} rounds
  alternating off/on, non-streaming \`POST /v1/chat/completions\` (autocannon, in the benchmark process)
- Gateway: \`gateway/src/main.ts\` in its own process, ${facts.store}, info-level request log, Prometheus metrics
  recorded for every request in both modes (they are always on)
- **off**: no OTEL_* variables — the default; no SDK is started, no span is created
- **on**: \`OTEL_TRACES_EXPORTER=otlp\`, \`OTEL_EXPORTER_OTLP_ENDPOINT\` pointing at a stand-in collector
  (\`bench/telemetry/otlp-sink.mjs\`, own process) — SDK defaults: http/protobuf, batch span processor, always-on sampler;
  a server span and a client span per request, \`traceparent\` sent to the supplier

| run | req/s | p50 ms | p99 ms | gateway CPU µs/request | requests | failed | OTLP exports / bytes per request |
|---|---:|---:|---:|---:|---:|---:|---:|
${rows.join('\n')}

| on / off (means over rounds) | throughput | p99 latency | gateway CPU per request |
|---|---:|---:|---:|
| tracing exporter on / off | ${ratio(
    avg('on', (r) => r.requestsPerSecond),
    avg('off', (r) => r.requestsPerSecond),
  )} | ${ratio(
    avg('on', (r) => r.p99Ms),
    avg('off', (r) => r.p99Ms),
  )} | ${ratio(cpuOn, cpuOff)} (${(cpuOn - cpuOff).toFixed(0)} µs) |

The CPU column is the gateway process's own CPU time divided by the requests it served, the
figure that does not depend on the load generator and simulator sharing the two cores. With
tracing off the request path does no span work at all (docs/observability.md#traces), so "off"
is the gateway's cost without tracing; "on" adds building, batching, encoding and sending two
spans per request.
`;
}
