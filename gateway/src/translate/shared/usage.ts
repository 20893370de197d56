// Token counts mean different things per family: Anthropic's input_tokens excludes cache reads
// and writes, OpenAI's prompt_tokens includes cached tokens (LiteLLM #13207, #11364). Every
// conversion goes through here so totals and costs agree whichever way a call went.
import type { TokenUsage } from '../../routing/cost.js';
import type { AnthropicUsage } from '../../wire/anthropic-messages.js';
import type { OpenAiUsage } from '../../wire/openai-chat.js';

/** A non-negative whole count from an optional upstream number (suppliers send null or omit fields). */
function count(value: number | null | undefined): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.floor(value) : 0;
}

/** Anthropic usage → the gateway's neutral usage (input includes cache reads and writes). */
export function tokenUsageFromAnthropic(usage: Partial<AnthropicUsage>): TokenUsage {
  const cacheRead = count(usage.cache_read_input_tokens);
  const cacheWrite = count(usage.cache_creation_input_tokens);
  return {
    inputTokens: count(usage.input_tokens) + cacheRead + cacheWrite,
    outputTokens: count(usage.output_tokens),
    cachedInputTokens: cacheRead,
    ...(cacheWrite > 0 && { cacheWriteInputTokens: cacheWrite }),
  };
}

/** OpenAI usage → the gateway's neutral usage. */
export function tokenUsageFromOpenAi(usage: Partial<OpenAiUsage>): TokenUsage {
  return {
    inputTokens: count(usage.prompt_tokens),
    outputTokens: count(usage.completion_tokens),
    cachedInputTokens: count(usage.prompt_tokens_details?.cached_tokens),
  };
}

/** The OpenAI usage block for a client: prompt includes cached tokens, total is the sum. */
export function openAiUsageFrom(usage: TokenUsage): OpenAiUsage {
  return {
    prompt_tokens: usage.inputTokens,
    completion_tokens: usage.outputTokens,
    total_tokens: usage.inputTokens + usage.outputTokens,
    prompt_tokens_details: { cached_tokens: usage.cachedInputTokens },
  };
}

/** The token counts of an Anthropic usage block, every one present. */
type AnthropicCounts = Required<
  Pick<AnthropicUsage, 'input_tokens' | 'output_tokens' | 'cache_creation_input_tokens' | 'cache_read_input_tokens'>
>;

/** The Anthropic usage block for a client: input excludes cache reads and writes, never negative. */
export function anthropicUsageFrom(usage: TokenUsage): AnthropicCounts {
  const writes = usage.cacheWriteInputTokens ?? 0;
  return {
    input_tokens: Math.max(usage.inputTokens - usage.cachedInputTokens - writes, 0),
    output_tokens: usage.outputTokens,
    cache_creation_input_tokens: writes,
    cache_read_input_tokens: usage.cachedInputTokens,
  };
}

/**
 * The usage of a whole message (a response body, a stream's message_start) for an Anthropic
 * client, with every field Anthropic's own messages carry, so an SDK reads values where it reads
 * them from Anthropic: the cache writes by lifetime (a translated call's writes are all taken as
 * the default five-minute lifetime; OpenAI-protocol suppliers report none), no server tools (none
 * cross a translation), and the standard tier (the request's `service_tier` is not carried over).
 */
export function anthropicMessageUsage(usage: TokenUsage): AnthropicUsage {
  const base = anthropicUsageFrom(usage);
  return {
    ...base,
    cache_creation: { ephemeral_5m_input_tokens: base.cache_creation_input_tokens ?? 0, ephemeral_1h_input_tokens: 0 },
    server_tool_use: null,
    service_tier: 'standard',
  };
}

/**
 * A whole answer's usage block replaced by what the call is charged, in the client's family —
 * for an answer whose supplier reported no complete usage, which the gateway counted
 * (pipeline/charged-usage.ts): the SDK then reads the tokens the caller pays for, as the headers say.
 */
export function withChargedUsage(family: 'openai' | 'anthropic', body: unknown, charged: TokenUsage): unknown {
  if (typeof body !== 'object' || body === null) return body;
  const answer = body as { usage?: Record<string, unknown> | null };
  const usage = family === 'openai' ? openAiUsageFrom(charged) : anthropicUsageFrom(charged);
  return { ...answer, usage: { ...(answer.usage ?? {}), ...usage } };
}
