import type { ModelRoute } from '../../../core/config/index.js';
import type { ApiError } from '../../../core/errors/index.js';
import type { TokenUsage, UsageBounds } from '../routing/cost.js';
import type { UsageTotals } from '../routing/routing-headers.js';

/** The client-facing interface family of a request. */
export type ClientFamily = 'openai' | 'anthropic';

/** One upstream SSE event as parsed (event name absent for bare `data:` frames). */
export interface SseEvent {
  event?: string;
  data: string;
}

/** The request to send upstream: path under the supplier's base URL (e.g. `/messages`) and JSON body. */
export interface UpstreamCall {
  path: string;
  body: Record<string, unknown>;
}

/**
 * Per-request facts a translator needs beyond the client's body; its usage bounds are those the
 * totals in a stream's usage event are charged within.
 */
export interface TranslationContext extends UsageBounds {
  route: ModelRoute;
  /** The public model id reported to the client (the one it asked for, or what `auto` chose). */
  publicModel: string;
  /** Used for `max_tokens` when an OpenAI client sent none and the supplier requires it. */
  defaultMaxTokens: number;
  /**
   * The client's input tokens as the gateway counted them, once the count is done: an Anthropic
   * stream's `message_start` reports them before a supplier of another protocol sends its usage
   * (at the end). Undefined until known, or where nothing was counted.
   */
  countedInputTokens?: () => number | undefined;
}

/** What a call is charged once its stream ended: the usage (the supplier's, or the gateway's count) and its totals. */
export interface ChargedCall {
  usage: TokenUsage;
  totals: UsageTotals;
}

/**
 * One instance per request (conventions 2–3): turns the client's request into the supplier's,
 * and the supplier's response (whole, or event by event) into the client's, keeping any stream
 * state inside. Named by the API pair: client family → supplier protocol.
 */
export interface Translator {
  /** The upstream request. Throws ApiError (`unsupported_parameter`, …) for what cannot be expressed. */
  request(): UpstreamCall;
  /** A whole upstream JSON response → the client's response body. */
  response(upstream: unknown): unknown;
  /** One upstream SSE event → client SSE text: zero or more complete frames (`...\n\n`). */
  streamEvent(event: SseEvent): string;
  /**
   * The upstream stream ended. Returns the closing frames; throws ApiError `stream_interrupted`
   * when the upstream ended without its terminal event (the client must not see a clean end).
   */
  streamEnd(): string;
  /**
   * Frames that wait for what the call is charged, written after streamEnd() once it is known:
   * the family's final usage event when the supplier reported no complete usage of its own (an
   * OpenAI-compatible server ignoring `include_usage`), so the client's SDK reads the tokens it
   * pays for rather than nothing or zeros. '' when nothing is owed; absent on translators that
   * never defer.
   */
  streamClose?(charged: ChargedCall | undefined): string;
  /** An error after the first byte → the client family's in-stream error frame, with the request's id (as every error body). */
  streamError(error: ApiError, requestId: string): string;
  /** Token usage seen so far (complete after response() or streamEnd()). */
  usage(): TokenUsage | undefined;
}
