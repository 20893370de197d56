import { ApiError } from '../../../core/errors/index.js';
import type { MessagesRequest } from '../interfaces/messages/schema.js';
import type { TokenUsage } from '../routing/cost.js';
import { reportedTotals } from '../routing/routing-headers.js';
import type { AnthropicStreamEvent, AnthropicUsage } from '../wire/anthropic-messages.js';
import { asAnthropicMessage } from './shared/supplier-answers.js';
import { providerStreamError } from './shared/provider-errors.js';
import { anthropicStreamErrorFrame } from './shared/stream-errors.js';
import { tokenUsageFromAnthropic } from './shared/usage.js';
import type { SseEvent, TranslationContext, Translator, UpstreamCall } from './types.js';

/**
 * Anthropic client → Anthropic-protocol supplier: native passthrough with the upstream model
 * id; gateway-only fields are removed (Anthropic refuses unknown metadata keys). Events are
 * re-framed unchanged except `message_start.message.model`, which reports the public id, and
 * `message_delta`, which also carries the call's totals as `svc`.
 */
export class AnthropicToAnthropic implements Translator {
  private input: Partial<AnthropicUsage> = {};
  private outputTokens = 0;
  private stopped = false;
  private started = false;

  constructor(
    private readonly request_: MessagesRequest,
    private readonly context: TranslationContext,
  ) {}

  request(): UpstreamCall {
    const body: Record<string, unknown> = { ...this.request_, model: this.context.route.model.upstream };
    delete body.region;
    if (this.request_.metadata) {
      const { user_id } = this.request_.metadata;
      if (user_id !== undefined) body.metadata = { user_id };
      else delete body.metadata;
    }
    return { path: '/messages', body };
  }

  response(upstream: unknown): unknown {
    // Read as every lane reads an Anthropic answer (shared/supplier-answers.ts).
    const message = asAnthropicMessage(upstream);
    this.input = message.usage;
    this.outputTokens = message.usage.output_tokens ?? 0;
    return { ...message, model: this.context.publicModel };
  }

  streamEvent(event: SseEvent): string {
    let data: AnthropicStreamEvent;
    try {
      data = JSON.parse(event.data) as AnthropicStreamEvent;
    } catch (cause) {
      throw new ApiError('invalid_backend_response', { cause, details: { supplier: this.context.route.supplier.name } });
    }
    // A data field of several lines (SSE allows it) comes joined by newlines: written again as one line.
    let out = event.data.includes('\n') ? JSON.stringify(data) : event.data;
    switch (data.type) {
      case 'message_start':
        this.started = true;
        this.input = data.message.usage ?? {};
        // Its output_tokens is a placeholder (1): the count is message_delta's, and a stream cut
        // before that is counted by the gateway (pipeline/charged-usage.ts), not charged as 1.
        this.outputTokens = 0;
        data.message.model = this.context.publicModel;
        out = JSON.stringify(data);
        break;
      case 'message_delta':
        // Usage in message_delta is cumulative: the last value is the total.
        this.outputTokens = data.usage.output_tokens;
        if (data.usage.input_tokens !== undefined) this.input = { ...this.input, ...data.usage };
        // The call's totals so far, with their cost, for clients that cannot read trailers (docs/interfaces.md).
        out = JSON.stringify({ ...data, svc: reportedTotals(this.context.route, this.usage(), this.context) });
        break;
      case 'message_stop':
        // A stop with no message before it is no answer: empty_stream, which fails over (nothing was sent yet).
        if (!this.started) throw new ApiError('empty_stream', { details: { supplier: this.context.route.supplier.name } });
        this.stopped = true;
        break;
      case 'error':
        throw providerStreamError(data.error.type, data.error.message);
      case 'content_block_start':
      case 'content_block_delta':
      case 'content_block_stop':
      case 'ping':
        break;
      default: {
        // Unknown event types are forwarded: clients are told to ignore what they do not know.
        break;
      }
    }
    return `event: ${event.event ?? data.type}\ndata: ${out}\n\n`;
  }

  streamEnd(): string {
    if (this.stopped) return '';
    throw new ApiError('stream_interrupted', { details: { supplier: this.context.route.supplier.name } });
  }

  streamError(error: ApiError, requestId: string): string {
    return anthropicStreamErrorFrame(error, requestId);
  }

  usage(): TokenUsage | undefined {
    return tokenUsageFromAnthropic({ ...this.input, output_tokens: this.outputTokens });
  }
}
