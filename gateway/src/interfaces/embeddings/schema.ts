import { z } from 'zod';
import { modelIdField } from '../../http/validate.js';

/** Most inputs one request may embed (OpenAI's limit). */
export const maxEmbeddingInputs = 2048;

const tokenArray = z.array(z.number().int().nonnegative()).min(1);

/** `POST /v1/embeddings` body; unknown fields pass through to the supplier. */
export const embeddingsRequest = z.looseObject({
  model: modelIdField,
  input: z.union([
    z.string(),
    z.array(z.string()).min(1).max(maxEmbeddingInputs),
    tokenArray,
    z.array(tokenArray).min(1).max(maxEmbeddingInputs),
  ]),
  encoding_format: z.enum(['float', 'base64']).optional(),
  dimensions: z.number().int().positive().max(65_536).optional(),
  user: z.string().optional(),
  region: z.string().min(1).optional(),
});

export type EmbeddingsRequest = z.infer<typeof embeddingsRequest>;
