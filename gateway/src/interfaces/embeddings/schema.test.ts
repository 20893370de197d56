import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { ApiError } from '../../../../core/errors/index.js';
import { validateBody } from '../../http/validate.js';
import { embeddingsRequest, maxEmbeddingInputs } from './schema.js';

describe('embeddings input', () => {
  it('a list over 2,048 inputs is refused naming input and the limit, not "input[0]: expected number"', () => {
    for (const input of [
      Array.from({ length: maxEmbeddingInputs + 1 }, () => 'x'),
      Array.from({ length: maxEmbeddingInputs + 1 }, () => [1]),
    ])
      assert.throws(
        () => validateBody(embeddingsRequest, { model: 'e', input }),
        (err: unknown) =>
          err instanceof ApiError &&
          err.code === 'validation_error' &&
          err.param === 'input' &&
          /at most 2048 inputs; 2049 were sent/.test(err.humanMessage),
      );
  });

  it('takes 2,048 inputs, and a single token array of any length (its tokens are counted later)', () => {
    validateBody(embeddingsRequest, { model: 'e', input: Array.from({ length: maxEmbeddingInputs }, () => 'x') });
    validateBody(embeddingsRequest, { model: 'e', input: Array.from({ length: maxEmbeddingInputs + 1 }, () => 1) });
  });
});
