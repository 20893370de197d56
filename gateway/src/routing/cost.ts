import type { SupplierModel } from '../../../core/config/index.js';

/** Token usage of one call, in the gateway's neutral form. */
export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  /** Input tokens served from the supplier's prompt cache (part of inputTokens). */
  cachedInputTokens: number;
}

/** Cost in USD of a call at the catalogue's prices (per million tokens), cached input at its own price. */
export function costUsd(model: SupplierModel, usage: TokenUsage): number {
  const uncached = Math.max(0, usage.inputTokens - usage.cachedInputTokens);
  const micro =
    uncached * model.inputUsdPerMtok + usage.cachedInputTokens * model.cachedInputUsdPerMtok + usage.outputTokens * model.outputUsdPerMtok;
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
