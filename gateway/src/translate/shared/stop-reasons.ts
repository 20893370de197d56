// Stop reasons always cross the family boundary through these two maps: a raw value of one
// family leaking to a client of the other breaks its SDK's typed handling (Portkey #1200).
import type { AnthropicStopReason } from '../../wire/anthropic-messages.js';
import type { OpenAiFinishReason } from '../../wire/openai-chat.js';

/** The finish reasons an OpenAI client may see from the gateway. */
export type ClientFinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter';

/** Anthropic `stop_reason` → OpenAI `finish_reason`; a missing or unknown reason reads as a normal stop. */
export function finishReasonFromAnthropic(reason: AnthropicStopReason | null | undefined): ClientFinishReason {
  if (reason === null || reason === undefined) return 'stop';
  switch (reason) {
    case 'end_turn':
    case 'stop_sequence':
    case 'pause_turn':
      return 'stop';
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'tool_use':
      return 'tool_calls';
    case 'refusal':
      return 'content_filter';
    default: {
      // Compile time: every known reason is handled. Run time: a reason Anthropic adds later
      // still maps to a value OpenAI clients know instead of passing through raw.
      const unknown: never = reason;
      void unknown;
      return 'stop';
    }
  }
}

/**
 * OpenAI `finish_reason` → Anthropic `stop_reason`. A turn that called tools and stopped without
 * saying so — no reason, or `stop` (some compatible servers say that for tool calls) — is
 * `tool_use`: SDK agent loops run the tools only then. Otherwise a missing or unknown reason
 * reads as `end_turn`.
 */
export function stopReasonFromOpenAi(reason: OpenAiFinishReason | null | undefined, calledTools = false): AnthropicStopReason {
  if (reason === null || reason === undefined || reason === 'stop') return calledTools ? 'tool_use' : 'end_turn';
  switch (reason) {
    // The answer was withheld or cut by the supplier's filter: not a complete turn.
    case 'content_filter':
      return 'refusal';
    case 'length':
      return 'max_tokens';
    case 'tool_calls':
    case 'function_call':
      return 'tool_use';
    default: {
      const unknown: never = reason;
      void unknown;
      return 'end_turn';
    }
  }
}
