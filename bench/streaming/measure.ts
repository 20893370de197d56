// The benchmark's own streaming client: undici `request`, the body read chunk by chunk and parsed
// as SSE (eventsource-parser). One timeline per stream: headers, first content event, end.
import { performance } from 'node:perf_hooks';
import { createParser } from 'eventsource-parser';
import { Agent, request } from 'undici';

/** Which wire format a stream is in, to recognise its first content event and its clean end. */
export type StreamFormat = 'openai-chat' | 'anthropic-messages';

/** One HTTP streaming request to measure. */
export interface StreamTarget {
  url: string;
  headers: Record<string, string>;
  body: string;
  format: StreamFormat;
}

/** Timeline of one stream, in milliseconds from just before the request was sent. */
export interface StreamTiming {
  /** Status line and headers received. */
  headersMs: number;
  /** First event carrying generated text. */
  firstContentMs: number;
  /** Body fully read. */
  totalMs: number;
  /** SSE events received (every frame, including `[DONE]` / `ping`). */
  events: number;
}

/** The client connection pool: keep-alive, enough connections for the highest concurrency. */
export function createAgent(connections: number): Agent {
  return new Agent({ connections, keepAliveTimeout: 30_000, pipelining: 1 });
}

function isContent(format: StreamFormat, event: string | undefined, data: string): boolean {
  if (format === 'anthropic-messages') {
    if (event !== 'content_block_delta') return false;
    const delta = (JSON.parse(data) as { delta?: { type?: string; text?: string } }).delta;
    return delta?.type === 'text_delta' && (delta.text ?? '') !== '';
  }
  if (data === '[DONE]') return false;
  const chunk = JSON.parse(data) as { choices?: { delta?: { content?: string | null } }[] };
  return (chunk.choices?.[0]?.delta?.content ?? '') !== '';
}

function isEnd(format: StreamFormat, event: string | undefined, data: string): boolean {
  return format === 'anthropic-messages' ? event === 'message_stop' : data === '[DONE]';
}

/** Streams one request; throws when the status is not 200 or the stream did not end cleanly. */
export async function measureStream(agent: Agent, target: StreamTarget): Promise<StreamTiming> {
  const started = performance.now();
  const res = await request(target.url, { method: 'POST', headers: target.headers, body: target.body, dispatcher: agent });
  const headersMs = performance.now() - started;
  if (res.statusCode !== 200) {
    const text = await res.body.text();
    throw new Error(`HTTP ${res.statusCode}: ${text.slice(0, 300)}`);
  }
  let firstContentMs: number | undefined;
  let events = 0;
  let ended = false;
  const parser = createParser({
    onEvent: (e) => {
      events++;
      if (firstContentMs === undefined && isContent(target.format, e.event, e.data)) firstContentMs = performance.now() - started;
      if (isEnd(target.format, e.event, e.data)) ended = true;
    },
  });
  const decoder = new TextDecoder();
  for await (const chunk of res.body) parser.feed(decoder.decode(chunk as Buffer, { stream: true }));
  const totalMs = performance.now() - started;
  if (!ended) throw new Error('stream ended without its terminal event');
  if (firstContentMs === undefined) throw new Error('stream carried no content');
  return { headersMs, firstContentMs, totalMs, events };
}

/** Results of N streams at a given concurrency. */
export interface LoadResult {
  timings: StreamTiming[];
  failed: number;
  firstError: string | undefined;
  wallMs: number;
}

/** Runs `requests` streams with `concurrency` in flight at a time (workers pulling from a counter). */
export async function runLoad(agent: Agent, target: StreamTarget, requests: number, concurrency: number): Promise<LoadResult> {
  const timings: StreamTiming[] = [];
  let failed = 0;
  let firstError: string | undefined;
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < requests) {
      next++;
      try {
        timings.push(await measureStream(agent, target));
      } catch (error) {
        failed++;
        firstError ??= error instanceof Error ? error.message : String(error);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, requests) }, worker));
  return { timings, failed, firstError, wallMs: performance.now() - started };
}

/** Percentile (nearest rank) of unsorted values; NaN for none. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export function mean(values: readonly number[]): number {
  return values.length === 0 ? Number.NaN : values.reduce((a, b) => a + b, 0) / values.length;
}
