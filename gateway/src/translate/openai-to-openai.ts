import { ApiError, renderErrorBody } from '../../../core/errors/index.js';
import type { ChatCompletionRequest } from '../interfaces/chat-completions/schema.js';
import type { TokenUsage } from '../routing/cost.js';
import type { OpenAiChatChunk, OpenAiChatCompletion, OpenAiUsage } from '../wire/openai-chat.js';
import type { SseEvent, TranslationContext, Translator, UpstreamCall } from './types.js';

/** Metadata keys the gateway reads for session affinity; not forwarded. */
const gatewayMetadataKeys = new Set(['session_id', 'sticky_key']);

/** OpenAI usage → the gateway's neutral usage (prompt tokens already include cached ones). */
export function usageFromOpenAi(usage: OpenAiUsage | null | undefined): TokenUsage | undefined {
  if (!usage) return undefined;
  return {
    inputTokens: usage.prompt_tokens ?? 0,
    outputTokens: usage.completion_tokens ?? 0,
    cachedInputTokens: usage.prompt_tokens_details?.cached_tokens ?? 0,
  };
}

/**
 * OpenAI client → OpenAI-protocol supplier: the request passes through with the upstream model
 * id and without gateway-only fields. Usage is always requested upstream (for metering) and
 * the usage chunk is only forwarded when the client asked for it. Chunks keep their bytes
 * except `model`, which reports the public id.
 */
export class OpenAiToOpenAi implements Translator {
  private seenUsage: TokenUsage | undefined;
  private finished = false;
  private done = false;

  constructor(
    private readonly request_: ChatCompletionRequest,
    private readonly context: TranslationContext,
  ) {}

  request(): UpstreamCall {
    const body: Record<string, unknown> = { ...this.request_, model: this.context.route.model.upstream };
    delete body.region;
    const metadata = this.request_.metadata;
    if (metadata) {
      const kept = Object.fromEntries(Object.entries(metadata).filter(([k]) => !gatewayMetadataKeys.has(k)));
      // OpenAI refuses metadata unless `store` is on; send it only where the client meant it.
      if (Object.keys(kept).length > 0 && this.request_.store === true) body.metadata = kept;
      else delete body.metadata;
    }
    if (this.request_.stream === true) body.stream_options = { ...(this.request_.stream_options ?? {}), include_usage: true };
    return { path: '/chat/completions', body };
  }

  response(upstream: unknown): unknown {
    const completion = upstream as OpenAiChatCompletion;
    if (!completion || typeof completion !== 'object' || !Array.isArray(completion.choices)) {
      throw new ApiError('invalid_backend_response', { details: { supplier: this.context.route.supplier.name } });
    }
    this.seenUsage = usageFromOpenAi(completion.usage);
    return { ...completion, model: this.context.publicModel };
  }

  streamEvent(event: SseEvent): string {
    if (event.data === '[DONE]') {
      this.done = true;
      return 'data: [DONE]\n\n';
    }
    let chunk: OpenAiChatChunk & { error?: { code?: unknown; type?: unknown; message?: unknown } };
    try {
      chunk = JSON.parse(event.data) as typeof chunk;
    } catch (cause) {
      throw new ApiError('invalid_backend_response', { cause, details: { supplier: this.context.route.supplier.name } });
    }
    if (chunk.error) throw streamedProviderError(chunk.error);
    if (chunk.usage) this.seenUsage = usageFromOpenAi(chunk.usage);
    if (chunk.choices?.some((c) => c.finish_reason)) this.finished = true;
    const usageOnly = Array.isArray(chunk.choices) && chunk.choices.length === 0;
    if (usageOnly && this.request_.stream_options?.include_usage !== true) return '';
    chunk.model = this.context.publicModel;
    if (this.request_.stream_options?.include_usage !== true) delete chunk.usage;
    return `data: ${JSON.stringify(chunk)}\n\n`;
  }

  streamEnd(): string {
    if (this.done) return '';
    // Some OpenAI-compatible suppliers omit [DONE]; a finish_reason means the answer is whole.
    if (this.finished) return 'data: [DONE]\n\n';
    throw new ApiError('stream_interrupted', { details: { supplier: this.context.route.supplier.name } });
  }

  streamError(error: ApiError): string {
    return `data: ${JSON.stringify({ error: renderErrorBody(error).error })}\n\n`;
  }

  usage(): TokenUsage | undefined {
    return this.seenUsage;
  }
}

/** An error object inside an OpenAI stream → ApiError keeping the provider's code. */
export function streamedProviderError(error: { code?: unknown; type?: unknown; message?: unknown }): ApiError {
  const code = typeof error.code === 'string' && error.code ? error.code : typeof error.type === 'string' && error.type ? error.type : 'stream_error';
  const message = typeof error.message === 'string' && error.message ? error.message : 'The supplier reported an error during the stream';
  return ApiError.fromProvider(code, 502, message);
}
