// Fixtures for the translator tests only: a hand-built route, a context, and a reader that turns
// the SSE text a translator produced back into frames the tests can assert on.
import type { ModelRoute, Supplier, SupplierModel, SupplierProtocol } from '../../../../core/config/index.js';
import type { SseEvent, TranslationContext } from '../types.js';

/** A route to `upstreamModel` at a supplier speaking `protocol`. */
export function testRoute(protocol: SupplierProtocol, upstreamModel = 'upstream-model-1', maxOutputTokens?: number): ModelRoute {
  const model: SupplierModel = {
    id: 'public-model',
    upstream: upstreamModel,
    ownedBy: 'test',
    inputUsdPerMtok: 1,
    outputUsdPerMtok: 2,
    cachedInputUsdPerMtok: 0.1,
    cacheWriteInputUsdPerMtok: 1.25,
    usdPerAudioMinute: 0,
    usdPerMchar: 0,
    defaultVoice: undefined,
    maxOutputTokens,
    outputLimitField: 'max_tokens',
    contextWindow: 200_000,
    capabilities: ['chat'],
  };
  const supplier: Supplier = {
    name: `test-${protocol}`,
    protocol,
    baseUrl: 'http://supplier.test/v1',
    credentials: [],
    apiKey: 'sk-test',
    region: 'EU',
    priority: 100,
    weight: 1,
    timeoutMs: 30_000,
    connectTimeoutMs: 5_000,
    firstByteTimeoutMs: 30_000,
    models: new Map([[model.id, model]]),
  };
  return { supplier, model };
}

/** A translation context for a route of `protocol`. */
export function testContext(protocol: SupplierProtocol, overrides: Partial<TranslationContext> = {}): TranslationContext {
  return { route: testRoute(protocol), publicModel: 'public-model', defaultMaxTokens: 4096, ...overrides };
}

/** One frame a translator wrote: its `event:` name (if any) and its `data:` text. */
export interface WrittenFrame {
  event?: string;
  data: string;
}

/** Splits translator output on blank lines into frames; fails on a frame that is not `event:`/`data:` lines. */
export function readFrames(text: string): WrittenFrame[] {
  const frames: WrittenFrame[] = [];
  for (const block of text.split('\n\n')) {
    if (block === '') continue;
    const frame: WrittenFrame = { data: '' };
    for (const line of block.split('\n')) {
      if (line.startsWith('event: ')) frame.event = line.slice('event: '.length);
      else if (line.startsWith('data: ')) frame.data = line.slice('data: '.length);
      else throw new Error(`unexpected SSE line: ${JSON.stringify(line)}`);
    }
    frames.push(frame);
  }
  if (!text.endsWith('\n\n') && text !== '') throw new Error('output does not end with a complete frame');
  return frames;
}

/** Upstream Anthropic events as a stream delivers them (`event:` name = the data's `type`). */
export function anthropicEvents(events: readonly ({ type: string } & Record<string, unknown>)[]): SseEvent[] {
  return events.map((data) => ({ event: data.type, data: JSON.stringify(data) }));
}

/** Upstream OpenAI chunks as a stream delivers them (bare `data:`), ending with `[DONE]` unless told otherwise. */
export function openAiEvents(chunks: readonly Record<string, unknown>[], done = true): SseEvent[] {
  const events: SseEvent[] = chunks.map((chunk) => ({ data: JSON.stringify(chunk) }));
  if (done) events.push({ data: '[DONE]' });
  return events;
}

/**
 * The usage block a translated Anthropic message carries (shared/usage.ts, anthropicMessageUsage),
 * as tests expect it: the counts given, and the fields Anthropic's own messages add — no cache
 * writes by lifetime, no server tools, the standard tier.
 */
export function expectedMessageUsage(counts: { input: number; output: number; cacheRead: number }) {
  return {
    input_tokens: counts.input,
    output_tokens: counts.output,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: counts.cacheRead,
    cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
    server_tool_use: null,
    service_tier: 'standard',
  };
}
