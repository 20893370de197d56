// Stream state machine B (docs/interfaces.md §Translation rules): OpenAI upstream chunks → Anthropic stream events, each
// framed with its `event:` line. One instance per request; all stream state lives here.
import { ApiError } from '../../../../core/errors/index.js';
import { isCompleteUsage, type TokenUsage } from '../../routing/cost.js';
import type { UsageTotals } from '../../routing/routing-headers.js';
import type { AnthropicStopReason, AnthropicStreamEvent } from '../../wire/anthropic-messages.js';
import type { OpenAiChatChunk, OpenAiToolCallDelta, OpenAiUsage } from '../../wire/openai-chat.js';
import type { ChargedCall, SseEvent } from '../types.js';
import { newMessageId, newToolUseId } from '../shared/ids.js';
import { isJsonObject, parseJson } from '../shared/safe-json.js';
import { eventFrame } from '../shared/sse-frames.js';
import { stopReasonFromOpenAi } from '../shared/stop-reasons.js';
import { sanitizeToolId } from '../shared/tool-ids.js';
import { anthropicMessageUsage, anthropicUsageFrom, tokenUsageFromOpenAi } from '../shared/usage.js';
import { carriesAnswer, openAiInBandError } from '../shared/supplier-answers.js';
import type { ToolNameMap } from './tool-names.js';

/** Writes one Anthropic event with its `event:` line (the Anthropic SDK drops frames without one). */
function frame(event: AnthropicStreamEvent | { type: 'ping' }): string {
  return eventFrame(event.type, event);
}

/** The tool block an OpenAI tool index currently feeds. */
interface ToolBlock {
  blockIndex: number;
  upstreamId: string | undefined;
}

/** Turns OpenAI chunks into Anthropic events, remembering what the client was told. */
export class OpenAiToAnthropicStream {
  private readonly messageId = newMessageId();
  private started = false;
  private nextIndex = 0;
  private open: { index: number; kind: 'text' | 'tool' } | undefined;
  private readonly tools = new Map<number, ToolBlock>();
  /** The finish arrives before the usage chunk, so the stop reason waits for the end. */
  private heldStop: AnthropicStopReason | undefined;
  /** The supplier streamed a refusal (delta.refusal): the turn ends as `refusal`. */
  private refused = false;
  private usageSeen: TokenUsage | undefined;
  private finished = false;
  /** finish() held message_delta and message_stop for the charged usage (close()). */
  private owesClose = false;

  constructor(
    private readonly publicModel: string,
    private readonly names: ToolNameMap,
    /** The call's totals for a usage (tokens and cost), added to message_delta as `svc`. */
    private readonly totals: (usage: TokenUsage) => UsageTotals | undefined,
    /** The request's input tokens as the gateway counted them, if known yet (TranslationContext). */
    private readonly countedInput: () => number | undefined = () => undefined,
  ) {}

  private sawChunk = false;
  /** A choice carried content, a refusal, a tool call or a finish_reason (see next()). */
  private sawAnswer = false;

  /** One upstream event → zero or more client frames. Throws ApiError for an upstream error chunk. */
  next(event: SseEvent): string {
    if (this.finished) return '';
    if (event.data.trim() === '[DONE]') {
      // `[DONE]` before any chunk is no answer: empty_stream, which fails over (nothing was sent yet);
      // so is one after chunks that carried no choice (`choices: []` with usage only) — it was an
      // empty message with a made-up end_turn.
      if (!this.sawChunk || !this.sawAnswer) throw new ApiError('empty_stream');
      return this.finish();
    }
    this.sawChunk = true;
    const data = parseJson(event.data);
    if (!isJsonObject(data)) {
      throw new ApiError('invalid_backend_response', { humanMessage: 'The supplier sent a stream chunk that is not a JSON object' });
    }
    if (isJsonObject(data.error)) throw openAiInBandError(data.error);
    if (event.event === 'error') throw openAiInBandError(data);
    const chunk = data as unknown as OpenAiChatChunk;
    if (isJsonObject(chunk.usage)) this.usageSeen = tokenUsageFromOpenAi(chunk.usage as Partial<OpenAiUsage>);
    let out = this.ensureStarted();
    const choices = Array.isArray(chunk.choices) ? chunk.choices : [];
    // n is always 1 toward the supplier; a `choices: []` chunk carries usage only.
    const choice = choices.find((c) => c.index === 0) ?? choices[0];
    if (choice === undefined) return out;
    const delta = isJsonObject(choice.delta) ? choice.delta : {};
    if (!this.sawAnswer) this.sawAnswer = carriesAnswer(choice);
    // Content before the finish, even when one chunk holds both (state machine B, step 7).
    if (typeof delta.content === 'string' && delta.content !== '') out += this.text(delta.content);
    if (typeof delta.refusal === 'string' && delta.refusal !== '') {
      out += this.text(delta.refusal);
      this.refused = true;
    }
    for (const call of Array.isArray(delta.tool_calls) ? delta.tool_calls : []) out += this.toolFragment(call);
    if (choice.finish_reason !== null && choice.finish_reason !== undefined) {
      out += this.closeOpen();
      // A refusal the model gave (OpenAI keeps it apart from the text) is Anthropic's `refusal`.
      this.heldStop = this.refused ? 'refusal' : stopReasonFromOpenAi(choice.finish_reason, this.tools.size > 0);
    }
    return out;
  }

  /** True once the message is closed: message_stop written, or held for the charged usage (close()). */
  get complete(): boolean {
    return this.finished;
  }

  /** True once the upstream reported why it stopped. */
  get sawFinish(): boolean {
    return this.heldStop !== undefined;
  }

  /** Usage from the upstream usage chunk, if one came. */
  usage(): TokenUsage | undefined {
    return this.usageSeen;
  }

  /**
   * Closes the message: any open block, message_delta with the held stop reason and usage,
   * message_stop. Without a complete usage from the supplier, message_delta and message_stop wait
   * for what the call is charged (close()), so the SDK's usage is that, not zeros.
   */
  finish(): string {
    if (this.finished) return '';
    const out = this.ensureStarted() + this.closeOpen();
    this.finished = true;
    if (this.usageSeen === undefined || !isCompleteUsage(this.usageSeen)) {
      this.owesClose = true;
      return out;
    }
    return out + this.closingFrames(this.usageSeen, this.totals(this.usageSeen));
  }

  /** The message_delta and message_stop finish() held, with the charged usage; '' when none is owed. */
  close(charged: ChargedCall | undefined): string {
    if (!this.owesClose) return '';
    this.owesClose = false;
    return this.closingFrames(charged?.usage ?? this.usageSeen, charged?.totals);
  }

  private closingFrames(usage: TokenUsage | undefined, totals: UsageTotals | undefined): string {
    const delta: AnthropicStreamEvent = {
      type: 'message_delta',
      delta: { stop_reason: this.heldStop ?? this.inferredStop(), stop_sequence: null },
      usage: usage === undefined ? { output_tokens: 0 } : anthropicUsageFrom(usage),
    };
    return eventFrame(delta.type, totals === undefined ? delta : { ...delta, svc: totals }) + frame({ type: 'message_stop' });
  }

  /** The stop reason of a stream that ended (`[DONE]`) without a finish_reason. */
  private inferredStop(): AnthropicStopReason {
    return this.refused ? 'refusal' : stopReasonFromOpenAi(undefined, this.tools.size > 0);
  }

  private ensureStarted(): string {
    if (this.started) return '';
    this.started = true;
    // Anthropic reports the input here; an OpenAI-protocol supplier only at the end. So: its usage
    // if the first chunk carried it, else the gateway's own count if done, else 0. message_delta
    // carries the supplier's figures, which are what is charged.
    const known = this.usageSeen === undefined ? undefined : anthropicMessageUsage(this.usageSeen);
    const start = frame({
      type: 'message_start',
      message: {
        id: this.messageId,
        type: 'message',
        role: 'assistant',
        model: this.publicModel,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: {
          ...(known ?? anthropicMessageUsage({ inputTokens: 0, outputTokens: 0, cachedInputTokens: 0 })),
          input_tokens: known?.input_tokens ?? this.countedInput() ?? 0,
          output_tokens: 0,
        },
      },
    });
    return start + frame({ type: 'ping' });
  }

  private closeOpen(): string {
    if (this.open === undefined) return '';
    const index = this.open.index;
    this.open = undefined;
    return frame({ type: 'content_block_stop', index });
  }

  private text(text: string): string {
    let out = '';
    if (this.open?.kind !== 'text') {
      out += this.closeOpen();
      const index = this.nextIndex++;
      this.open = { index, kind: 'text' };
      out += frame({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
    }
    return out + frame({ type: 'content_block_delta', index: this.open.index, delta: { type: 'text_delta', text } });
  }

  private toolFragment(call: OpenAiToolCallDelta): string {
    let out = '';
    const toolIndex = typeof call.index === 'number' ? call.index : 0;
    let tool = this.tools.get(toolIndex);
    // Some compatible suppliers reuse index 0 for parallel calls; a new id means a new call (Portkey #1275).
    const isNewCall =
      tool === undefined || (call.id !== undefined && call.id !== '' && tool.upstreamId !== undefined && call.id !== tool.upstreamId);
    if (isNewCall) {
      out += this.closeOpen();
      const blockIndex = this.nextIndex++;
      tool = { blockIndex, upstreamId: call.id || undefined };
      this.tools.set(toolIndex, tool);
      this.open = { index: blockIndex, kind: 'tool' };
      out += frame({
        type: 'content_block_start',
        index: blockIndex,
        content_block: {
          type: 'tool_use',
          id: call.id ? sanitizeToolId(call.id) : newToolUseId(),
          name: this.names.restore(call.function?.name ?? ''),
          input: {},
        },
      });
    }
    const sent: unknown = call.function?.arguments;
    // Arguments written as a JSON object (some compatible servers do) are its text.
    const args = isJsonObject(sent) ? JSON.stringify(sent) : sent;
    // The full arguments may arrive in the same chunk as the name.
    if (tool !== undefined && typeof args === 'string' && args !== '') {
      out += frame({ type: 'content_block_delta', index: tool.blockIndex, delta: { type: 'input_json_delta', partial_json: args } });
    }
    return out;
  }
}
