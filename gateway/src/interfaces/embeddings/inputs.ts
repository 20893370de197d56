import { ApiError } from '../../../../core/errors/index.js';
import { countTokensSliced } from '../../tokens/count.js';
import type { EmbeddingsRequest } from './schema.js';

/** Tokens allowed in one input string (docs/spec-conformance.md 8.1). */
export const maxTokensPerInput = 2048;

/** What the gateway knows of a request's inputs before and after checking them. */
export interface MeasuredInputs {
  /** How many inputs (embeddings to expect back). */
  count: number;
  /** Upper bound of the input tokens, without tokenizing: what the budget reservation assumes. */
  tokenBound: number;
  /**
   * Checks every input against the 2,048-token limit (the error names the first offending input
   * by its index). Tokenizing is the expensive part, so the pipeline calls this only once the
   * request passed its key's rate limit and budget.
   */
  check(): Promise<void>;
  /** The count (o200k_base), made only if the supplier reports no usage; after `check`. */
  countTokens(): Promise<number>;
}

/** Special tokens an embedding model may add to one input, over its bytes or given tokens. */
const specialTokensPerInput = 4;

/**
 * Measures a request's inputs. A token covers at least one UTF-8 byte, so the byte length bounds
 * a string's tokens, and a string of at most 2,048 bytes cannot exceed the limit: only longer
 * strings are tokenized, by `check`, in slices on the shared counting lane and stopping at 2,049
 * tokens — so the work is bounded by the limit, not by the input. Token arrays count their length.
 */
export function measureInputs(input: EmbeddingsRequest['input']): MeasuredInputs {
  const { items, single } = inputsOf(input);
  const paramOf = (index: number) => (single ? 'input' : `input[${index}]`);
  let tokenBound = 0;
  for (const [index, item] of items.entries()) {
    const param = paramOf(index);
    if (typeof item !== 'string') {
      if (item.length > maxTokensPerInput) throw tooLong(param, item.length, false);
      tokenBound += item.length;
      continue;
    }
    if (item.length === 0)
      throw new ApiError('invalid_input', { param, humanMessage: `${param} is an empty string; every input must have text` });
    tokenBound += Buffer.byteLength(item);
  }
  // A model may add a few special tokens (BOS, EOS…) to each input.
  tokenBound += items.length * specialTokensPerInput;
  /** Exact counts of the long strings, made by `check`. */
  const counted = new Map<number, number>();
  return {
    count: items.length,
    tokenBound,
    check: async () => {
      for (const [index, item] of items.entries()) {
        if (typeof item !== 'string' || Buffer.byteLength(item) <= maxTokensPerInput) continue;
        const tokens = await countTokensSliced([item], maxTokensPerInput);
        if (tokens > maxTokensPerInput) throw tooLong(paramOf(index), tokens, true);
        counted.set(index, tokens);
      }
    },
    countTokens: async () => {
      let tokens = 0;
      const uncounted: string[] = [];
      items.forEach((item, index) => {
        if (typeof item !== 'string') tokens += item.length;
        else if (counted.has(index)) tokens += counted.get(index)!;
        else uncounted.push(item);
      });
      return uncounted.length > 0 ? tokens + (await countTokensSliced(uncounted)) : tokens;
    },
  };
}

/** The four accepted input shapes as a list; `single` when the body held one input, not a list. */
function inputsOf(input: EmbeddingsRequest['input']): { items: readonly (string | number[])[]; single: boolean } {
  if (typeof input === 'string') return { items: [input], single: true };
  if (input.every((x) => typeof x === 'number')) return { items: [input as number[]], single: true };
  return { items: input as (string | number[])[], single: false };
}

/** `atLeast`: counting stopped at the first token over the limit, so `tokens` is a lower bound. */
function tooLong(param: string, tokens: number, atLeast: boolean): ApiError {
  return new ApiError('invalid_input', {
    param,
    humanMessage: `${param} has ${tokens} tokens${atLeast ? ' or more' : ''}; each input may have at most ${maxTokensPerInput} tokens`,
    details: { tokens, limit: maxTokensPerInput },
  });
}
