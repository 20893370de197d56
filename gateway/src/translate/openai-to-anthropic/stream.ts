// Stream state machine A (docs/interfaces.md §Translation rules): Anthropic upstream events → OpenAI chat.completion.chunk
// frames. One instance per request; all stream state lives here.
import { ApiError } from '../../../../core/errors/index.js';
import type { TokenUsage } from '../../routing/cost.js';
import type { UsageTotals } from '../../routing/routing-headers.js';
import type { AnthropicStreamEvent, AnthropicUsage } from '../../wire/anthropic-messages.js';
import type { OpenAiChatChunk, OpenAiToolCallDelta } from '../../wire/openai-chat.js';
import type { SseEvent } from '../types.js';
import { newChatCompletionId, unixSeconds } from '../shared/ids.js';
import { providerStreamError } from '../shared/provider-errors.js';
import { isJsonObject, parseJson } from '../shared/safe-json.js';
import { dataFrame, doneFrame } from '../shared/sse-frames.js';
import { finishReasonFromAnthropic, type ClientFinishReason } from '../shared/stop-reasons.js';
import { openAiUsageFrom, tokenUsageFromAnthropic } from '../shared/usage.js';
import { jsonToolName } from './request.js';

type ChunkDelta = OpenAiChatChunk['choices'][number]['delta'];

/** Parses one upstream frame into an Anthropic stream event; a frame that is not JSON is a broken upstream. */
function parseEvent(event: SseEvent): AnthropicStreamEvent | undefined {
  const data = parseJson(event.data);
  if (!isJsonObject(data)) {
    throw new ApiError('invalid_backend_response', { humanMessage: 'The supplier sent a stream event that is not a JSON object' });
  }
  if (typeof data.type !== 'string') return undefined;
  return data as unknown as AnthropicStreamEvent;
}

/** Turns Anthropic stream events into OpenAI chunk frames, remembering what the client was told. */
export class AnthropicToOpenAiStream {
  private readonly id = newChatCompletionId();
  private readonly created = unixSeconds();
  private roleSent = false;
  /** Tool indexes count tool blocks only (LiteLLM #5231): a text block at index 0 does not shift them. */
  private toolCount = 0;
  private readonly toolIndexByBlock = new Map<number, number>();
  /** Client tool indexes that were sent argument text (the others get `{}` when their block stops). */
  private readonly toolsWithArguments = new Set<number>();
  /** Blocks of the JSON-mode tool, whose input is streamed as content. */
  private readonly jsonBlocks = new Set<number>();
  private finishSent = false;
  private finished = false;
  private started = false;
  private usageSeen: Partial<AnthropicUsage> | undefined;

  constructor(
    private readonly publicModel: string,
    private readonly jsonMode: boolean,
    private readonly includeUsage: boolean,
    /** The call's totals for a usage (tokens and cost), added to the usage chunk as `svc`. */
    private readonly totals: (usage: TokenUsage) => UsageTotals | undefined,
  ) {}

  /** One upstream event → zero or more client frames. Throws ApiError for an upstream `error` event. */
  next(event: SseEvent): string {
    if (this.finished) return '';
    const parsed = parseEvent(event);
    if (parsed === undefined) return '';
    switch (parsed.type) {
      case 'message_start':
        this.started = true;
        // Its output_tokens is a placeholder (1): the count is message_delta's, and a stream cut
        // before that is counted by the gateway (pipeline/charged-usage.ts), not charged as 1.
        this.recordUsage({ ...parsed.message?.usage, output_tokens: undefined });
        return this.ensureRole();
      case 'content_block_start':
        return this.blockStart(parsed);
      case 'content_block_delta':
        return this.blockDelta(parsed);
      case 'content_block_stop':
        return this.blockStop(parsed);
      case 'ping':
        return '';
      case 'message_delta': {
        this.recordUsage(parsed.usage);
        const reason = parsed.delta?.stop_reason ?? null;
        // Several message_delta events may come; the client gets one finish chunk, from the first.
        if (this.finishSent || reason === null) return '';
        return this.finish(finishReasonFromAnthropic(reason));
      }
      case 'message_stop':
        // A stop with no message before it is no answer: empty_stream, which fails over (nothing was sent yet).
        if (!this.started) throw new ApiError('empty_stream');
        return this.stop();
      case 'error':
        throw providerStreamError(parsed.error?.type ?? 'api_error', parsed.error?.message ?? 'The supplier reported an error');
      default: {
        const unknown: never = parsed;
        void unknown; // unknown events are ignored (docs/interfaces.md, state machine A)
        return '';
      }
    }
  }

  /** True once `message_stop` arrived and `[DONE]` was written. */
  get complete(): boolean {
    return this.finished;
  }

  /** Usage seen so far (input from message_start, output the last cumulative value). */
  usage(): TokenUsage | undefined {
    return this.usageSeen === undefined ? undefined : tokenUsageFromAnthropic(this.usageSeen);
  }

  private recordUsage(usage: Partial<AnthropicUsage> | undefined): void {
    if (usage === undefined) return;
    // Later events repeat counts cumulatively, so the newest value of each field wins.
    const merged: Partial<AnthropicUsage> = { ...this.usageSeen };
    for (const key of ['input_tokens', 'output_tokens', 'cache_creation_input_tokens', 'cache_read_input_tokens'] as const) {
      const value = usage[key];
      if (typeof value === 'number') merged[key] = value;
    }
    this.usageSeen = merged;
  }

  private chunk(delta: ChunkDelta, finishReason: ClientFinishReason | null = null): string {
    const chunk: OpenAiChatChunk = {
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.created,
      model: this.publicModel,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    };
    // With include_usage, OpenAI marks every chunk before the usage chunk with usage: null.
    if (this.includeUsage) chunk.usage = null;
    return dataFrame(chunk);
  }

  private ensureRole(): string {
    if (this.roleSent) return '';
    this.roleSent = true;
    return this.chunk({ role: 'assistant', content: '' });
  }

  private blockStart(event: Extract<AnthropicStreamEvent, { type: 'content_block_start' }>): string {
    const block = event.content_block;
    // The wire types describe a well-behaved supplier; a malformed event is skipped, not a crash.
    if (!isJsonObject(block)) return '';
    switch (block.type) {
      case 'text':
        return block.text === '' ? this.ensureRole() : this.ensureRole() + this.chunk({ content: block.text });
      case 'tool_use': {
        if (this.jsonMode && block.name === jsonToolName) {
          this.jsonBlocks.add(event.index);
          return this.ensureRole();
        }
        const index = this.toolCount++;
        this.toolIndexByBlock.set(event.index, index);
        const call: OpenAiToolCallDelta = { index, id: block.id, type: 'function', function: { name: block.name, arguments: '' } };
        return this.ensureRole() + this.chunk({ tool_calls: [call] });
      }
      case 'thinking':
      case 'redacted_thinking':
        return '';
      default: {
        const unknown: never = block;
        void unknown;
        return '';
      }
    }
  }

  private blockDelta(event: Extract<AnthropicStreamEvent, { type: 'content_block_delta' }>): string {
    const delta = event.delta;
    if (!isJsonObject(delta)) return '';
    switch (delta.type) {
      case 'text_delta':
        return delta.text === '' ? '' : this.ensureRole() + this.chunk({ content: delta.text });
      case 'input_json_delta': {
        // The first fragment is often "": nothing to tell the client.
        if (delta.partial_json === '') return '';
        if (this.jsonBlocks.has(event.index)) return this.ensureRole() + this.chunk({ content: delta.partial_json });
        const index = this.toolIndexByBlock.get(event.index);
        if (index === undefined) return '';
        this.toolsWithArguments.add(index);
        return this.chunk({ tool_calls: [{ index, function: { arguments: delta.partial_json } }] });
      }
      case 'thinking_delta':
      case 'signature_delta':
        return '';
      default: {
        const unknown: never = delta;
        void unknown;
        return '';
      }
    }
  }

  /**
   * A tool call whose input was empty (no input_json_delta, or only ""): its arguments are `{}`,
   * as in a whole answer — an OpenAI client parses the arguments it assembled, and "" is not JSON.
   */
  private blockStop(event: { index: number }): string {
    const index = this.toolIndexByBlock.get(event.index);
    if (index === undefined || this.toolsWithArguments.has(index)) return '';
    this.toolsWithArguments.add(index);
    return this.chunk({ tool_calls: [{ index, function: { arguments: '{}' } }] });
  }

  private finish(reason: ClientFinishReason): string {
    this.finishSent = true;
    // JSON mode answered through the forced tool reads as a normal stop to the client.
    const mapped = reason === 'tool_calls' && this.toolCount === 0 && this.jsonBlocks.size > 0 ? 'stop' : reason;
    return this.ensureRole() + this.chunk({}, mapped);
  }

  private stop(): string {
    let out = this.finishSent ? '' : this.finish('stop');
    if (this.includeUsage) {
      const seen = this.usage();
      const usage = seen ?? { inputTokens: 0, outputTokens: 0, cachedInputTokens: 0 };
      const chunk: OpenAiChatChunk & { svc?: UsageTotals | undefined } = {
        id: this.id,
        object: 'chat.completion.chunk',
        created: this.created,
        model: this.publicModel,
        choices: [],
        usage: openAiUsageFrom(usage),
      };
      if (seen) chunk.svc = this.totals(seen);
      out += dataFrame(chunk);
    }
    this.finished = true;
    return out + doneFrame;
  }
}
