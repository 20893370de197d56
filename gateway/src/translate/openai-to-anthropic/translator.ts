// The translator for OpenAI chat-completions clients served by Anthropic-protocol suppliers.
import { ApiError } from '../../../../core/errors/index.js';
import type { ChatCompletionRequest } from '../../interfaces/chat-completions/schema.js';
import type { TokenUsage } from '../../routing/cost.js';
import { reportedTotals } from '../../routing/routing-headers.js';
import type { SseEvent, TranslationContext, Translator, UpstreamCall } from '../types.js';
import { openAiStreamErrorFrame } from '../shared/stream-errors.js';
import { anthropicRequestFrom } from './request.js';
import { asAnthropicMessage } from '../shared/supplier-answers.js';
import { chatCompletionFrom } from './response.js';
import { AnthropicToOpenAiStream } from './stream.js';

/**
 * OpenAI client → Anthropic supplier, one instance per request. The `[DONE]` frame is written
 * when upstream `message_stop` arrives, so `streamEnd()` only checks that it did.
 */
export class OpenAiToAnthropic implements Translator {
  private jsonMode = false;
  private stream: AnthropicToOpenAiStream | undefined;
  private responseUsage: TokenUsage | undefined;

  constructor(
    private readonly clientRequest: ChatCompletionRequest,
    private readonly context: TranslationContext,
  ) {}

  /** The Anthropic `/messages` call. Throws `unsupported_parameter` for n > 1 and unsupported content. */
  request(): UpstreamCall {
    const plan = anthropicRequestFrom(this.clientRequest, this.context);
    this.jsonMode = plan.jsonMode;
    return { path: '/messages', body: plan.body };
  }

  /** A whole Anthropic message → OpenAI `chat.completion`. */
  response(upstream: unknown): unknown {
    const { completion, usage } = chatCompletionFrom(asAnthropicMessage(upstream), this.context.publicModel, this.jsonMode);
    this.responseUsage = usage;
    return completion;
  }

  /** One Anthropic stream event → OpenAI chunk frames; an upstream `error` event throws ApiError. */
  streamEvent(event: SseEvent): string {
    return this.streamState().next(event);
  }

  /** `[DONE]` was already written at `message_stop`; without it the stream was cut short. */
  streamEnd(): string {
    if (this.stream?.complete !== true) throw new ApiError('stream_interrupted');
    return '';
  }

  /** The in-stream error frame the OpenAI SDK throws as an APIError (a top-level `error` key). */
  streamError(error: ApiError, requestId: string): string {
    return openAiStreamErrorFrame(error, requestId);
  }

  /** Usage from the response, or what the stream has reported so far. */
  usage(): TokenUsage | undefined {
    return this.stream?.usage() ?? this.responseUsage;
  }

  private streamState(): AnthropicToOpenAiStream {
    // request() normally ran first; if not, derive JSON mode from the client's request alone.
    if (this.stream === undefined) {
      const format = this.clientRequest.response_format?.type;
      const jsonMode = this.jsonMode || format === 'json_object' || format === 'json_schema';
      this.stream = new AnthropicToOpenAiStream(
        this.context.publicModel,
        jsonMode,
        this.clientRequest.stream_options?.include_usage === true,
        (usage) => reportedTotals(this.context.route, usage, this.context),
      );
    }
    return this.stream;
  }
}
