import { ApiError } from '../../../core/errors/index.js';
import type { ChatCompletionRequest } from '../interfaces/chat-completions/schema.js';
import { isCompleteUsage, type TokenUsage } from '../routing/cost.js';
import { reportedTotals } from '../routing/routing-headers.js';
import { forwardedMetadata } from '../routing/session-inputs.js';
import type { OpenAiChatChunk } from '../wire/openai-chat.js';
import { asChatCompletion } from './shared/supplier-answers.js';
import { providerStreamError } from './shared/provider-errors.js';
import { stringifyObjectArguments } from './shared/safe-json.js';
import { carriesAnswer } from './shared/supplier-answers.js';
import { newChatCompletionId, unixSeconds } from './shared/ids.js';
import { dataFrame, doneFrame } from './shared/sse-frames.js';
import { openAiStreamErrorFrame } from './shared/stream-errors.js';
import { openAiUsageFrom, tokenUsageFromOpenAi } from './shared/usage.js';
import type { ChargedCall, SseEvent, TranslationContext, Translator, UpstreamCall } from './types.js';

/**
 * OpenAI client → OpenAI-protocol supplier: the request passes through with the upstream model
 * id and without gateway-only fields. Usage is always requested upstream (for metering) and
 * the usage chunk is only forwarded when the client asked for it, with the call's totals added
 * as `svc`; a supplier that sends none (or one missing a side) still gives such a client its
 * usage chunk, with what the call is charged, before `[DONE]`. Chunks keep their content except
 * `model`, which reports the public id.
 */
export class OpenAiToOpenAi implements Translator {
  private seenUsage: TokenUsage | undefined;
  /** The choices seen, and those that ended with a finish_reason: whole only when every one of `n` did. */
  private readonly choicesSeen = new Set<number>();
  private readonly choicesFinished = new Set<number>();
  private done = false;
  /** A chunk arrived before `[DONE]`: a stream of `[DONE]` alone is no answer (empty_stream, failover). */
  private sawChunk = false;
  /**
   * A choice carried something — content, a refusal, a tool call or a finish_reason. A stream of
   * `choices: []` chunks (usage only) and `[DONE]` is no answer either: it was a 200 with nothing.
   */
  private sawAnswer = false;
  /**
   * The client asked for a usage chunk and the supplier sent none with complete usage: it follows
   * at streamClose — the supplier's partial one (`chunk`) with the charged usage, or one written here.
   */
  private owedUsage: { chunk: OpenAiChatChunk | undefined } | undefined;
  /** The id and time given to an answer whose supplier sent none (missingIdentity): the same for every chunk. */
  private minted: { id: string; created: number } | undefined;
  /** The last chunk (its id and created name a usage chunk written here). */
  private lastChunk: OpenAiChatChunk | undefined;

  constructor(
    private readonly request_: ChatCompletionRequest,
    private readonly context: TranslationContext,
  ) {}

  request(): UpstreamCall {
    const body: Record<string, unknown> = { ...this.request_, model: this.context.route.model.upstream };
    delete body.region;
    if (this.request_.metadata) {
      const kept = forwardedMetadata(this.request_.metadata);
      // OpenAI refuses metadata unless `store` is on; send it only where the client meant it.
      if (kept && this.request_.store === true) body.metadata = kept;
      else delete body.metadata;
    }
    if (this.request_.stream === true) body.stream_options = { ...(this.request_.stream_options ?? {}), include_usage: true };
    return { path: '/chat/completions', body };
  }

  response(upstream: unknown): unknown {
    // Read as every lane reads an OpenAI answer (shared/supplier-answers.ts).
    const completion = asChatCompletion(upstream);
    this.seenUsage = completion.usage ? tokenUsageFromOpenAi(completion.usage) : undefined;
    return { ...completion, ...this.missingIdentity(completion, 'chat.completion'), model: this.context.publicModel };
  }

  /**
   * The `id`, `object` and `created` an OpenAI answer (or chunk) must carry, where the supplier left
   * them out (some OpenAI-compatible servers do): the SDKs' types require them, and strictly typed
   * clients refused the answer (outside probe). One id per stream; none added when all are there.
   */
  private missingIdentity(
    answer: { id?: unknown; object?: unknown; created?: unknown },
    object: string,
  ): Record<string, unknown> | undefined {
    if (typeof answer.id === 'string' && answer.id !== '' && typeof answer.object === 'string' && typeof answer.created === 'number')
      return undefined;
    this.minted ??= { id: newChatCompletionId(), created: unixSeconds() };
    return {
      id: typeof answer.id === 'string' && answer.id !== '' ? answer.id : this.minted.id,
      object: typeof answer.object === 'string' ? answer.object : object,
      created: typeof answer.created === 'number' ? answer.created : this.minted.created,
    };
  }

  streamEvent(event: SseEvent): string {
    if (event.data === '[DONE]') {
      if (!this.sawChunk || !this.sawAnswer)
        throw new ApiError('empty_stream', { details: { supplier: this.context.route.supplier.name } });
      this.done = true;
      return this.closing();
    }
    this.sawChunk = true;
    let chunk: OpenAiChatChunk & { error?: { code?: unknown; type?: unknown; message?: unknown } };
    try {
      chunk = JSON.parse(event.data) as typeof chunk;
    } catch (cause) {
      throw new ApiError('invalid_backend_response', { cause, details: { supplier: this.context.route.supplier.name } });
    }
    if (chunk.error) {
      const { code, type, message } = chunk.error;
      const name = typeof code === 'string' && code ? code : typeof type === 'string' && type ? type : 'stream_error';
      throw providerStreamError(
        name,
        typeof message === 'string' && message ? message : 'The supplier reported an error during the stream',
        typeof type === 'string' ? type : undefined,
      );
    }
    if (chunk.usage) this.seenUsage = tokenUsageFromOpenAi(chunk.usage);
    if (chunk.choices) {
      for (const choice of chunk.choices) {
        const index = typeof choice.index === 'number' ? choice.index : 0;
        this.choicesSeen.add(index);
        if (choice.finish_reason) this.choicesFinished.add(index);
        if (!this.sawAnswer) this.sawAnswer = carriesAnswer(choice);
        // Arguments written as an object leave as the string OpenAI's schema requires.
        const calls = (choice.delta as { tool_calls?: unknown } | undefined)?.tool_calls;
        if (Array.isArray(calls)) stringifyObjectArguments(calls);
      }
    }
    const identity = this.missingIdentity(chunk, 'chat.completion.chunk');
    if (identity) Object.assign(chunk, identity);
    this.lastChunk = chunk;
    const wantsUsage = this.request_.stream_options?.include_usage === true;
    const usageOnly = Array.isArray(chunk.choices) && chunk.choices.length === 0;
    if (usageOnly && !wantsUsage) return '';
    chunk.model = this.context.publicModel;
    if (!wantsUsage) delete chunk.usage;
    if (!chunk.usage) return dataFrame(chunk);
    // A usage chunk missing a side is held: it leaves with what is charged (streamClose).
    if (usageOnly && !isCompleteUsage(this.seenUsage)) {
      this.owedUsage = { chunk };
      return '';
    }
    // A complete usage settles one held before it (one usage chunk), and carries the call's
    // totals with its cost (`svc`, docs/interfaces.md).
    this.owedUsage = undefined;
    return dataFrame({ ...chunk, svc: reportedTotals(this.context.route, this.seenUsage, this.context) });
  }

  streamEnd(): string {
    if (this.done) return '';
    // Some OpenAI-compatible suppliers omit [DONE]; a finish_reason on every choice means the
    // answer is whole. With `n` > 1 one finished choice is not: a stream cut while the next was
    // still being written ended as a clean answer (outside probe).
    if (this.whole()) return this.closing();
    throw new ApiError('stream_interrupted', { details: { supplier: this.context.route.supplier.name } });
  }

  /**
   * Every choice seen ended with a finish_reason. Not "all `n` of them": a supplier that ignores
   * `n` (and omits `[DONE]`) would then never end whole; OpenAI interleaves the choices from the
   * start, so a cut leaves a choice seen but unfinished.
   */
  private whole(): boolean {
    return this.choicesSeen.size > 0 && this.choicesFinished.size === this.choicesSeen.size;
  }

  /**
   * `[DONE]` — or nothing yet when the client asked for usage and the supplier gave no complete
   * usage chunk: the usage chunk and `[DONE]` then follow once the call is charged (streamClose).
   */
  private closing(): string {
    if (this.request_.stream_options?.include_usage !== true || isCompleteUsage(this.seenUsage)) return doneFrame;
    this.owedUsage ??= { chunk: undefined };
    return '';
  }

  streamClose(charged: ChargedCall | undefined): string {
    const owed = this.owedUsage;
    if (owed === undefined) return '';
    this.owedUsage = undefined;
    const usage = charged?.usage ?? this.seenUsage ?? { inputTokens: 0, outputTokens: 0, cachedInputTokens: 0 };
    const chunk = {
      ...(owed.chunk ?? {
        id: this.lastChunk?.id,
        object: 'chat.completion.chunk',
        created: this.lastChunk?.created,
        model: this.context.publicModel,
        choices: [],
      }),
      usage: openAiUsageFrom(usage),
      ...(charged && { svc: charged.totals }),
    };
    return dataFrame(chunk) + doneFrame;
  }

  streamError(error: ApiError, requestId: string): string {
    return openAiStreamErrorFrame(error, requestId);
  }

  usage(): TokenUsage | undefined {
    return this.seenUsage;
  }
}
