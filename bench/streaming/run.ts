// Streaming benchmark (not a test). Run it with:
//
//   npx tsx bench/streaming/run.ts
//
// (there is deliberately no npm script for it). Env: BENCH_STREAM_REQUESTS (streams per row,
// default 500), BENCH_STREAM_CONCURRENCY (default "1,16"), BENCH_STREAM_SIM_LATENCY_MS (latency
// the simulator waits before answering, default 0 — it has no per-chunk delay).
//
// Starts the supplier simulator and the gateway as child processes (like bench/overhead/run.ts),
// then sends the same streaming request to the simulator directly and through the gateway, with
// a small undici client of its own, sequentially and with 16 concurrent streams. Measures time to
// headers, to the first content event, to the end of the stream and the number of events, and
// derives the gateway's per-chunk overhead. Two scenarios: OpenAI chat streams passed through to
// an openai supplier, and an Anthropic client translated onto the same openai supplier. Prints
// the table and writes it into bench/RESULTS.md between `<!-- streaming:start/end -->` markers,
// leaving the overhead section alone.
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { createAgent, runLoad, type StreamTarget } from './measure.js';
import { benchModel, root, startServers } from './processes.js';
import { renderStreamingSection, writeSection, type Row } from './results.js';

const requests = Number(process.env.BENCH_STREAM_REQUESTS ?? 500);
const concurrencies = (process.env.BENCH_STREAM_CONCURRENCY ?? '1,16').split(',').map(Number);
const simLatencyMs = Number(process.env.BENCH_STREAM_SIM_LATENCY_MS ?? 0);
const warmup = 200;
const ports = { sim: 18_190, gateway: 18_180 };

/** Twelve words, so the simulated reply (first 12 words + filler) is as long as it gets. */
const prompt = 'Explain in detail how a streaming gateway forwards server sent events between clients and suppliers';

interface Scenario {
  name: string;
  direct: StreamTarget;
  gateway: StreamTarget;
}

function scenarios(simUrl: string, gatewayUrl: string, secret: string): Scenario[] {
  const json = { 'content-type': 'application/json' };
  const chat = JSON.stringify({ model: benchModel, messages: [{ role: 'user', content: prompt }], max_tokens: 256, stream: true });
  const messages = JSON.stringify({ model: benchModel, max_tokens: 256, messages: [{ role: 'user', content: prompt }], stream: true });
  const anthropicHeaders = { ...json, 'anthropic-version': '2023-06-01' };
  return [
    {
      name: 'OpenAI chat, passthrough',
      direct: { url: `${simUrl}/v1/chat/completions`, headers: json, body: chat, format: 'openai-chat' },
      gateway: {
        url: `${gatewayUrl}/v1/chat/completions`,
        headers: { ...json, authorization: `Bearer ${secret}` },
        body: chat,
        format: 'openai-chat',
      },
    },
    {
      name: 'Anthropic client, translated',
      direct: { url: `${simUrl}/v1/messages`, headers: anthropicHeaders, body: messages, format: 'anthropic-messages' },
      gateway: {
        url: `${gatewayUrl}/v1/messages`,
        headers: { ...anthropicHeaders, 'x-api-key': secret },
        body: messages,
        format: 'anthropic-messages',
      },
    },
  ];
}

async function main(): Promise<void> {
  const servers = await startServers(ports, simLatencyMs);
  const agent = createAgent(Math.max(...concurrencies) * 2);
  const rows: Row[] = [];
  try {
    for (const scenario of scenarios(servers.simUrl, servers.gatewayUrl, servers.secret)) {
      for (const target of ['direct', 'gateway'] as const) {
        const warm = await runLoad(agent, scenario[target], warmup, 4); // JIT, pools, caches
        if (warm.failed > 0) throw new Error(`${scenario.name} ${target}: warm-up failed: ${warm.firstError}`);
      }
      for (const concurrency of concurrencies) {
        for (const target of ['direct', 'gateway'] as const) {
          const result = await runLoad(agent, scenario[target], requests, concurrency);
          if (result.failed > 0)
            console.warn(`${scenario.name} ${target} c=${concurrency}: ${result.failed} failed, first: ${result.firstError}`);
          rows.push({ scenario: scenario.name, target, concurrency, result });
        }
      }
    }
  } finally {
    await agent.close();
    servers.stop();
  }
  const section = renderStreamingSection(rows, {
    date: new Date().toISOString().slice(0, 10),
    machine: `${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`,
    requests,
    warmup,
    simLatencyMs,
  });
  console.log(section);
  writeSection(join(root, 'bench/RESULTS.md'), 'streaming', section, '## Streaming');
}

await main();
