import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { anthropicUsageFrom, openAiUsageFrom, tokenUsageFromAnthropic, tokenUsageFromOpenAi } from './usage.js';

describe('usage', () => {
  it('counts Anthropic cache reads and writes into the input total, reads as cached, writes apart', () => {
    const usage = tokenUsageFromAnthropic({
      input_tokens: 10,
      output_tokens: 7,
      cache_read_input_tokens: 100,
      cache_creation_input_tokens: 5,
    });
    assert.deepEqual(usage, { inputTokens: 115, outputTokens: 7, cachedInputTokens: 100, cacheWriteInputTokens: 5 });
    assert.deepEqual(openAiUsageFrom(usage), {
      prompt_tokens: 115,
      completion_tokens: 7,
      total_tokens: 122,
      prompt_tokens_details: { cached_tokens: 100 },
    });
    // Back to an Anthropic client as the supplier said it: plain input, reads and writes apart.
    assert.deepEqual(anthropicUsageFrom(usage), {
      input_tokens: 10,
      output_tokens: 7,
      cache_creation_input_tokens: 5,
      cache_read_input_tokens: 100,
    });
  });

  it('takes cached tokens out of OpenAI prompt tokens for Anthropic clients, never below zero', () => {
    const usage = tokenUsageFromOpenAi({ prompt_tokens: 120, completion_tokens: 9, prompt_tokens_details: { cached_tokens: 100 } });
    assert.deepEqual(usage, { inputTokens: 120, outputTokens: 9, cachedInputTokens: 100 });
    assert.deepEqual(anthropicUsageFrom(usage), {
      input_tokens: 20,
      output_tokens: 9,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 100,
    });
    assert.equal(anthropicUsageFrom({ inputTokens: 5, outputTokens: 0, cachedInputTokens: 8 }).input_tokens, 0);
  });

  it('reads missing and null fields as zero', () => {
    assert.deepEqual(tokenUsageFromAnthropic({ output_tokens: 3, cache_read_input_tokens: null }), {
      inputTokens: 0,
      outputTokens: 3,
      cachedInputTokens: 0,
    });
    assert.deepEqual(tokenUsageFromOpenAi({ prompt_tokens_details: null }), { inputTokens: 0, outputTokens: 0, cachedInputTokens: 0 });
  });
});
