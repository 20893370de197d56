import { setImmediate as nextTurn } from 'node:timers/promises';
import { countTokens, isWithinTokenLimit } from 'gpt-tokenizer';
import { ApiError } from '../../../../core/errors/index.js';
import type { EmbeddingsRequest } from './schema.js';

/** Tokens allowed in one input string (spec part 8). */
export const maxTokensPerInput = 2048;

/** Characters tokenized between yields to the event loop, so a 10 MB body never stalls other requests. */
const charactersPerTurn = 64 * 1024;

/** What the gateway knows of a request's inputs after checking them. */
export interface MeasuredInputs {
  /** How many inputs (embeddings to expect back). */
  count: number;
  /** Upper bound of the input tokens: what the budget reservation assumes. */
  tokenBound: number;
  /** The exact count (o200k_base), computed only if the supplier reports no usage. */
  countTokens(): number;
}

/**
 * Checks every input against the 2,048-token limit and bounds the request's tokens. A token
 * covers at least one UTF-8 byte, so a string of at most 2,048 bytes cannot exceed the limit and
 * is not tokenized here at all: its byte length is its bound. Longer strings are tokenized
 * (stopping at 2,049 tokens), yielding to the event loop every 64 K characters. Token arrays
 * count their length. The error names the first offending input by its index.
 */
export async function measureInputs(input: EmbeddingsRequest['input']): Promise<MeasuredInputs> {
  const { items, single } = inputsOf(input);
  let tokenBound = 0;
  let sinceYield = 0;
  for (const [index, item] of items.entries()) {
    const param = single ? 'input' : `input[${index}]`;
    if (typeof item !== 'string') {
      if (item.length > maxTokensPerInput) throw tooLong(param, item.length);
      tokenBound += item.length;
      continue;
    }
    if (item.length === 0) throw new ApiError('invalid_input', { param, humanMessage: `${param} is an empty string; every input must have text` });
    const bytes = Buffer.byteLength(item);
    if (bytes <= maxTokensPerInput) {
      tokenBound += bytes;
      continue;
    }
    if (sinceYield > charactersPerTurn) {
      await nextTurn();
      sinceYield = 0;
    }
    sinceYield += item.length;
    const tokens = isWithinTokenLimit(item, maxTokensPerInput);
    if (tokens === false) throw tooLong(param, countTokens(item));
    tokenBound += tokens;
  }
  return {
    count: items.length,
    tokenBound,
    countTokens: () => items.reduce<number>((sum, item) => sum + (typeof item === 'string' ? countTokens(item) : item.length), 0),
  };
}

/** The four accepted input shapes as a list; `single` when the body held one input, not a list. */
function inputsOf(input: EmbeddingsRequest['input']): { items: readonly (string | number[])[]; single: boolean } {
  if (typeof input === 'string') return { items: [input], single: true };
  if (input.every((x) => typeof x === 'number')) return { items: [input as number[]], single: true };
  return { items: input as (string | number[])[], single: false };
}

function tooLong(param: string, tokens: number): ApiError {
  return new ApiError('invalid_input', {
    param,
    humanMessage: `${param} has ${tokens} tokens; each input may have at most ${maxTokensPerInput} tokens`,
    details: { tokens, limit: maxTokensPerInput },
  });
}
