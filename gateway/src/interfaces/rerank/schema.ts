import { z } from 'zod';
import { modelIdField } from '../../http/validate.js';

/** Most documents one request may rerank (Cohere's and Jina's limit). */
export const maxRerankDocuments = 1000;

/** A document as text, or Cohere/Jina's `{text}` object. */
const document = z.union([z.string(), z.looseObject({ text: z.string() })]);

/** `POST /v1/rerank` body (Cohere/Jina common format); unknown fields pass through. */
export const rerankRequest = z.looseObject({
  model: modelIdField,
  query: z.string().min(1),
  documents: z.array(document).min(1).max(maxRerankDocuments),
  top_n: z.number().int().positive().optional(),
  return_documents: z.boolean().optional(),
  region: z.string().min(1).optional(),
});

export type RerankRequest = z.infer<typeof rerankRequest>;
