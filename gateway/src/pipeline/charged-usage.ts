import type { FastifyRequest } from 'fastify';
import type { ModelRoute } from '../../../core/config/index.js';
import { isCompleteUsage, type TokenUsage, type UsageBounds } from '../routing/cost.js';
import { countOrBound, countTokensSliced } from '../tokens/count.js';
import type { Countable } from '../tokens/tokenizer.js';
import { noteUsage, type RoutingRecord } from './attempts.js';

/** What can be counted of a call when its supplier reports no usage, and the bounds its reservation was made with. */
export interface CallCountables {
  /** The client's request: its messages, tools and schema. */
  input: () => Iterable<Countable>;
  /** Upper bound of the input tokens (the request's input cap within the window), charged if counting fails. */
  inputBound: number;
  /** The supplier's answer as far as it came (answer-tally.ts). */
  output: () => Iterable<Countable>;
  /** The output cap the reservation assumed, charged if counting fails. */
  outputBound: number;
  /**
   * Where counting the answer may stop: the most output the call can be charged (outputTokenLimit —
   * the request's max tokens, else the catalogue's max output or the context window). Not the
   * reservation's bound: without a max tokens that is a fallback (4,096), and an answer counted only
   * up to it was charged a few thousand tokens whatever its length.
   */
  outputStop: number;
}

/** Which side of a call's usage the gateway counted itself, for the request log. */
export type CountedSide = 'input' | 'output';

/**
 * The usage a chat call is charged: the supplier's own counts, and where it gave none — no usage
 * at all (OpenAI-compatible servers that ignore `stream_options.include_usage`), zero input tokens
 * (no chat request has none), zero output tokens, or a stream cut off before its usage event —
 * the gateway's count of the request and of what the supplier answered. Without this such a call
 * was charged $0: a budget or wallet could be spent through without limit. A count that fails is
 * charged at the bound the reservation was made with (countOrBound): the answer is never lost.
 *
 * Nothing is counted when the supplier reported both sides, the normal case: no cost on the hot path.
 */
export async function chargedUsage(
  reported: TokenUsage | undefined,
  call: CallCountables,
  request: FastifyRequest,
): Promise<{ usage: TokenUsage; counted: CountedSide[] }> {
  if (reported && isCompleteUsage(reported)) return { usage: reported, counted: [] };
  const counted: CountedSide[] = [];
  let inputTokens = reported?.inputTokens ?? 0;
  let outputTokens = reported?.outputTokens ?? 0;
  if (inputTokens === 0) {
    inputTokens = await countOrBound(() => countTokensSliced(call.input(), call.inputBound), call.inputBound, request);
    if (inputTokens > 0) counted.push('input');
  }
  if (outputTokens === 0) {
    outputTokens = await countOrBound(() => countTokensSliced(call.output(), call.outputStop), call.outputBound, request);
    if (outputTokens > 0) counted.push('output');
  }
  // What the supplier did report of its cache stays: a stream cut before its output count still
  // read and wrote the cache, and cache writes are priced apart (cost.ts).
  const cacheWrites = reported?.cacheWriteInputTokens ?? 0;
  return {
    usage: {
      inputTokens,
      outputTokens,
      cachedInputTokens: reported?.cachedInputTokens ?? 0,
      ...(cacheWrites > 0 && { cacheWriteInputTokens: cacheWrites }),
    },
    counted,
  };
}

/**
 * Charges the call (chargedUsage) and notes it on the request's routing record: the usage within
 * the bounds its reservation assumed and its cost (noteUsage), and which sides were counted.
 */
export async function noteChargedUsage(
  record: RoutingRecord,
  route: ModelRoute,
  reported: TokenUsage | undefined,
  call: CallCountables,
  request: FastifyRequest,
  bounds: UsageBounds,
): Promise<void> {
  const { usage, counted } = await chargedUsage(reported, call, request);
  noteUsage(record, route, usage, undefined, bounds);
  if (counted.length > 0) record.usageCounted = counted;
}
