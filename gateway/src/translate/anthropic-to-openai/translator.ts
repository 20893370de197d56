// The translator for Anthropic messages clients served by OpenAI-protocol suppliers.
import { ApiError } from '../../../../core/errors/index.js';
import type { MessagesRequest } from '../../interfaces/messages/schema.js';
import type { TokenUsage } from '../../routing/cost.js';
import { reportedTotals } from '../../routing/routing-headers.js';
import type { ChargedCall, SseEvent, TranslationContext, Translator, UpstreamCall } from '../types.js';
import { anthropicStreamErrorFrame } from '../shared/stream-errors.js';
import { openAiRequestFrom } from './request.js';
import { asChatCompletion } from '../shared/supplier-answers.js';
import { anthropicMessageFrom } from './response.js';
import { OpenAiToAnthropicStream } from './stream.js';
import { ToolNameMap } from './tool-names.js';

/**
 * Anthropic client → OpenAI supplier, one instance per request. Some OpenAI-compatible
 * suppliers end a stream without `[DONE]`; a stream that reported its finish_reason still ends
 * cleanly in `streamEnd()`, one that did not is `stream_interrupted`.
 */
export class AnthropicToOpenAi implements Translator {
  private readonly names = new ToolNameMap();
  private stream: OpenAiToAnthropicStream | undefined;
  private responseUsage: TokenUsage | undefined;

  constructor(
    private readonly clientRequest: MessagesRequest,
    private readonly context: TranslationContext,
  ) {
    // Learn shortened names up front so responses read back correctly whatever the call order.
    for (const tool of clientRequest.tools ?? []) this.names.toUpstream(tool.name);
  }

  /** The OpenAI `/chat/completions` call. Throws `unsupported_parameter` for more than 4 stop sequences. */
  request(): UpstreamCall {
    return { path: '/chat/completions', body: openAiRequestFrom(this.clientRequest, this.context, this.names) };
  }

  /** A whole OpenAI chat completion → Anthropic message, tool names restored. */
  response(upstream: unknown): unknown {
    const { message, usage } = anthropicMessageFrom(asChatCompletion(upstream), this.context.publicModel, this.names);
    this.responseUsage = usage;
    return message;
  }

  /** One OpenAI stream event → Anthropic event frames; an upstream error chunk throws ApiError. */
  streamEvent(event: SseEvent): string {
    return this.streamState().next(event);
  }

  /** '' after `[DONE]`; closes the message when only `[DONE]` is missing; else `stream_interrupted`. */
  streamEnd(): string {
    const stream = this.streamState();
    if (stream.complete) return '';
    if (stream.sawFinish) return stream.finish();
    throw new ApiError('stream_interrupted');
  }

  /** message_delta and message_stop, when the stream held them for the charged usage. */
  streamClose(charged: ChargedCall | undefined): string {
    return this.stream?.close(charged) ?? '';
  }

  /**
   * The `event: error` frame the Anthropic SDK throws. The whole catalogue body goes in, as on
   * HTTP errors: `error.details.error_code` is what the SDK exposes as `err.errorCode`.
   */
  streamError(error: ApiError, requestId: string): string {
    return anthropicStreamErrorFrame(error, requestId);
  }

  /** Usage from the response, or the stream's usage chunk. */
  usage(): TokenUsage | undefined {
    return this.stream?.usage() ?? this.responseUsage;
  }

  private streamState(): OpenAiToAnthropicStream {
    this.stream ??= new OpenAiToAnthropicStream(
      this.context.publicModel,
      this.names,
      (usage) => reportedTotals(this.context.route, usage, this.context),
      this.context.countedInputTokens,
    );
    return this.stream;
  }
}
