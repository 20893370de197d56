// Renders the streaming benchmark's table and writes it into bench/RESULTS.md between its own
// markers, leaving every other section (the overhead benchmark's) untouched.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { mean, percentile, type LoadResult } from './measure.js';

/** One measured (scenario, target, concurrency) cell. */
export interface Row {
  scenario: string;
  target: 'direct' | 'gateway';
  concurrency: number;
  result: LoadResult;
}

/** Facts printed above the table. */
export interface RunFacts {
  date: string;
  machine: string;
  requests: number;
  warmup: number;
  simLatencyMs: number;
}

const ms = (v: number) => (Number.isFinite(v) ? v.toFixed(2) : 'n/a');
const us = (v: number) => (Number.isFinite(v) ? v.toFixed(0) : 'n/a');

interface Summary {
  headersP50: number;
  headersP95: number;
  contentP50: number;
  contentP95: number;
  totalP50: number;
  totalP95: number;
  /** Time from the first content event to the end of the stream (p50). */
  streamingP50: number;
  events: number;
}

function summarise(result: LoadResult): Summary {
  const t = result.timings;
  return {
    headersP50: percentile(
      t.map((x) => x.headersMs),
      50,
    ),
    headersP95: percentile(
      t.map((x) => x.headersMs),
      95,
    ),
    contentP50: percentile(
      t.map((x) => x.firstContentMs),
      50,
    ),
    contentP95: percentile(
      t.map((x) => x.firstContentMs),
      95,
    ),
    totalP50: percentile(
      t.map((x) => x.totalMs),
      50,
    ),
    totalP95: percentile(
      t.map((x) => x.totalMs),
      95,
    ),
    streamingP50: percentile(
      t.map((x) => x.totalMs - x.firstContentMs),
      50,
    ),
    events: mean(t.map((x) => x.events)),
  };
}

/** The markdown section (without markers). */
export function renderStreamingSection(rows: readonly Row[], facts: RunFacts): string {
  const lines: string[] = [];
  for (const row of rows) {
    const s = summarise(row.result);
    let overhead = '—';
    let streamingOverhead = '—';
    if (row.target === 'gateway') {
      const direct = rows.find((r) => r.scenario === row.scenario && r.concurrency === row.concurrency && r.target === 'direct');
      if (direct) {
        const d = summarise(direct.result);
        // Per chunk as defined for this benchmark: (gateway total − direct total) / events, p50 totals.
        overhead = us(((s.totalP50 - d.totalP50) * 1000) / s.events);
        // The same, counting only the streaming phase (after the first content event).
        streamingOverhead = us(((s.streamingP50 - d.streamingP50) * 1000) / s.events);
      }
    }
    lines.push(
      `| ${row.scenario} | ${row.target} | ${row.concurrency} | ${row.result.timings.length} | ${row.result.failed} | ` +
        `${((row.result.timings.length * 1000) / row.result.wallMs).toFixed(0)} | ${s.events.toFixed(1)} | ` +
        `${ms(s.headersP50)} / ${ms(s.headersP95)} | ${ms(s.contentP50)} / ${ms(s.contentP95)} | ${ms(s.totalP50)} / ${ms(s.totalP95)} | ` +
        `${overhead} | ${streamingOverhead} |`,
    );
  }
  return `## Streaming: time to first byte, first content event and per-chunk overhead (\`npx tsx bench/streaming/run.ts\`)

- Date: ${facts.date}
- Machine: ${facts.machine}
- Command: \`npx tsx bench/streaming/run.ts\` (env \`BENCH_STREAM_REQUESTS\`, \`BENCH_STREAM_CONCURRENCY\`, \`BENCH_STREAM_SIM_LATENCY_MS\`)
- Load: ${facts.requests} streams per row after ${facts.warmup} warm-up streams per target, at concurrency 1 (sequential) and 16;
  client: undici \`request\` reading the body chunk by chunk, SSE parsed with eventsource-parser, in the benchmark process
- Simulator: ${facts.simLatencyMs > 0 ? `${facts.simLatencyMs} ms latency before answering` : 'no injected latency'}; it has no per-chunk delay, so every
  event of a stream is written back to back and the stream time is pure transport + processing
- Gateway: its own process, embedded PostgreSQL (not on the hot path), in-process store, info-level request log;
  simulator, gateway and client share the same cores, so absolute figures include CPU contention
- Scenarios (the same client request sent to the simulator directly and to the gateway):
  - **OpenAI chat, passthrough**: \`POST /v1/chat/completions\` \`stream:true\` → openai-protocol supplier
  - **Anthropic client, translated**: \`POST /v1/messages\` \`stream:true\` for an openai-protocol model; the gateway translates
    the request to chat completions and the chunks back to Anthropic events; *direct* is the simulator's own
    \`/v1/messages\` stream for the same request
- The gateway sends its status line with the first translated frame (so an upstream that fails before any
  byte still gets a proper HTTP error): its "headers" time is its time to the first event.
- At concurrency 16 the per-event figure is mostly queueing for the shared CPU (all streams of one
  request finish within a millisecond of their first event); compare streams/s there.
- Times in ms, p50 / p95. Per-chunk overhead = (gateway p50 total − direct p50 total) / events of the gateway stream;
  "streaming phase" uses (total − first content) instead of total, so it excludes the per-request work
  (auth, routing, upstream connect) that happens before the first event.

| scenario | target | concurrency | streams | failed | streams/s | events/stream | headers ms | first content ms | total ms | overhead µs/event | streaming phase µs/event |
|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
${lines.join('\n')}
`;
}

/**
 * Replaces the section between `<!-- name:start -->` and `<!-- name:end -->` in a markdown file,
 * keeping everything else. Without markers, an unmarked legacy section starting at a line that
 * begins with `legacyHeading` (up to the next marker or the end) is replaced; otherwise the
 * section is appended.
 */
export function writeSection(path: string, name: string, body: string, legacyHeading: string): void {
  const start = `<!-- ${name}:start -->`;
  const end = `<!-- ${name}:end -->`;
  const block = `${start}\n${body.trim()}\n${end}`;
  let text = existsSync(path) ? readFileSync(path, 'utf8') : '# Benchmark results\n';
  const from = text.indexOf(start);
  const to = text.indexOf(end);
  if (from >= 0 && to > from) {
    text = text.slice(0, from) + block + text.slice(to + end.length);
  } else {
    const legacy = text.search(new RegExp(`^${legacyHeading.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`, 'm'));
    if (legacy >= 0) {
      const nextMarker = text.indexOf('<!-- ', legacy);
      const stop = nextMarker >= 0 ? nextMarker : text.length;
      text = `${text.slice(0, legacy)}${block}\n${stop < text.length ? `\n${text.slice(stop)}` : ''}`;
    } else {
      text = `${text.trimEnd()}\n\n${block}\n`;
    }
  }
  writeFileSync(path, text);
}
