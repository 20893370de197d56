import { z } from 'zod';
import { modelIdField } from '../../http/validate.js';

/** Most inputs one request may embed (OpenAI's limit). */
export const maxEmbeddingInputs = 2048;

const tokenArray = z.array(z.number().int().nonnegative()).min(1);

/** `POST /v1/embeddings` body; unknown fields pass through to the supplier. */
export const embeddingsRequest = z.looseObject({
  model: modelIdField,
  // The list limit is checked after the shape: as a bound inside the union, a list of 2,049
  // strings failed every branch and was explained by the token-array branch ("input[0]: expected
  // number, received string").
  input: z.union([z.string(), z.array(z.string()).min(1), tokenArray, z.array(tokenArray).min(1)]).superRefine((input, ctx) => {
    // A list of inputs (strings or token arrays), not one token array: at most maxEmbeddingInputs.
    if (Array.isArray(input) && typeof input[0] !== 'number' && input.length > maxEmbeddingInputs)
      ctx.addIssue({ code: 'custom', message: `must hold at most ${maxEmbeddingInputs} inputs; ${input.length} were sent` });
  }),
  encoding_format: z.enum(['float', 'base64']).optional(),
  dimensions: z.number().int().positive().max(65_536).optional(),
  user: z.string().optional(),
  region: z.string().min(1).optional(),
});

export type EmbeddingsRequest = z.infer<typeof embeddingsRequest>;
