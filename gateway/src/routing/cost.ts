import type { SupplierModel } from '../../../core/config/index.js';

/** Token usage of one call, in the gateway's neutral form. */
export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  /** Input tokens served from the supplier's prompt cache (part of inputTokens). */
  cachedInputTokens: number;
  /**
   * Input tokens written to the supplier's prompt cache (part of inputTokens, apart from the
   * cached ones): Anthropic reports and bills them; OpenAI-protocol suppliers have none.
   */
  cacheWriteInputTokens?: number;
}

/**
 * Whether a supplier's usage counts both sides: no chat call has zero input tokens, and zero
 * output tokens is what a stream cut before its usage event (or a supplier that reports none)
 * leaves — the gateway then counts the missing side itself (pipeline/charged-usage.ts).
 */
export function isCompleteUsage(usage: TokenUsage | undefined): boolean {
  return usage !== undefined && usage.inputTokens > 0 && usage.outputTokens > 0;
}

/**
 * The output cap assumed when neither the client nor the catalogue gives one: what a request is
 * reserved for, and the `max_tokens` sent to suppliers that require one.
 */
export const fallbackMaxTokens = 4096;

/** The context window assumed for a model whose catalogue entry gives none: the largest offered today. */
export const largestContextWindow = 2_000_000;

/** What a call can have used: the bounds its reservation assumed (enforce.ts, worstCaseUsd) and its charge is held to. */
export interface UsageBounds {
  /** The client's own output cap, if it set one: per answer. */
  outputCap?: number | undefined;
  /** How many answers the client asked for (OpenAI's `n`): each may use the output cap. */
  choices?: number | undefined;
  /**
   * The most input tokens the request can amount to (tokens/input-cap.ts: its bytes, plus an
   * allowance per image); none when it holds a file or document, which only the context window bounds.
   */
  inputCap?: number | undefined;
}

/** The most input tokens a call on `model` can be charged: the request's cap, within the context window. */
export function inputTokenLimit(model: SupplierModel, inputCap: number | undefined): number {
  const context = model.contextWindow ?? largestContextWindow;
  return inputCap === undefined ? context : Math.min(inputCap, context);
}

/**
 * The most output tokens a call on `model` can be charged: the request's output cap (else the
 * catalogue's max output, else the context window) within the context window, once per answer.
 */
export function outputTokenLimit(model: SupplierModel, bounds: UsageBounds = {}): number {
  const context = model.contextWindow ?? largestContextWindow;
  return Math.min(bounds.outputCap ?? model.maxOutputTokens ?? context, context) * (bounds.choices ?? 1);
}

/**
 * A supplier's token counts within what the call can have used: input at most the request's input
 * cap and the model's context window, output at most the request's output cap (the client's max
 * tokens, else the catalogue's max output) and the context window, cached input at most the input.
 * A supplier reporting more — 3,000,000,000 prompt tokens, or 2,000 completion tokens for
 * max_tokens 50 — is wrong; charging it would overflow the audit log's counts and let concurrent
 * requests overspend a budget whose reservations assumed these bounds (enforce.ts, worstCaseUsd,
 * takes the same ones). `capped` says whether anything was cut. A request for `choices` answers
 * (OpenAI's `n`) may use the output cap once per answer.
 */
export function boundedUsage(model: SupplierModel, usage: TokenUsage, bounds: UsageBounds = {}): { usage: TokenUsage; capped: boolean } {
  const inputTokens = Math.min(usage.inputTokens, inputTokenLimit(model, bounds.inputCap));
  const outputTokens = Math.min(usage.outputTokens, outputTokenLimit(model, bounds));
  const cachedInputTokens = Math.min(usage.cachedInputTokens, inputTokens);
  const writes = usage.cacheWriteInputTokens ?? 0;
  const cacheWriteInputTokens = Math.min(writes, inputTokens - cachedInputTokens);
  const capped =
    inputTokens !== usage.inputTokens ||
    outputTokens !== usage.outputTokens ||
    cachedInputTokens !== usage.cachedInputTokens ||
    cacheWriteInputTokens !== writes;
  return {
    usage: capped ? { inputTokens, outputTokens, cachedInputTokens, ...(writes > 0 && { cacheWriteInputTokens }) } : usage,
    capped,
  };
}

/** Cost in USD of a call at the catalogue's prices (per million tokens), cache reads and writes at their own prices. */
export function costUsd(model: SupplierModel, usage: TokenUsage): number {
  const writes = usage.cacheWriteInputTokens ?? 0;
  const plain = Math.max(0, usage.inputTokens - usage.cachedInputTokens - writes);
  const micro =
    plain * model.inputUsdPerMtok +
    usage.cachedInputTokens * model.cachedInputUsdPerMtok +
    writes * model.cacheWriteInputUsdPerMtok +
    usage.outputTokens * model.outputUsdPerMtok;
  // Round to 1e-9 USD so sums of many calls do not drift in the last float bits.
  return Math.round(micro * 1000) / 1e9;
}

/** What an audio call consumed beyond tokens, in the units the catalogue prices them. */
export interface MediaUsage {
  /** Transcription: seconds of audio. */
  audioSeconds?: number;
  /** Speech: characters of input text. */
  characters?: number;
}

/** Cost in USD of a call's tokens (if any) and media units at the catalogue's prices. */
export function callCostUsd(model: SupplierModel, usage: TokenUsage | undefined, media: MediaUsage | undefined): number {
  let usd = usage ? costUsd(model, usage) : 0;
  if (media?.audioSeconds) usd += (media.audioSeconds / 60) * model.usdPerAudioMinute;
  if (media?.characters) usd += (media.characters * model.usdPerMchar) / 1e6;
  return Math.round(usd * 1e9) / 1e9;
}
