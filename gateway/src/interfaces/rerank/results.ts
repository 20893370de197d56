import { ApiError } from '../../../../core/errors/index.js';

/** One result as the client receives it. */
export interface RerankResult {
  index: number;
  relevance_score: number;
  document?: { text: string };
}

/**
 * A supplier's results checked and normalised: each `index` a distinct position of the request's
 * documents, scores numbers, sorted by score descending (ties keep request order), cut to
 * `top_n`, with the document text attached when asked for (from the request when the supplier
 * left it out). Anything else is an unusable answer (502, failover to the next supplier).
 */
export function normaliseResults(
  upstream: unknown,
  documents: readonly string[],
  topN: number | undefined,
  withDocuments: boolean,
  supplier: string,
): RerankResult[] {
  const raw = (upstream as { results?: unknown }).results;
  const invalid = (why: string) =>
    new ApiError('upstream_invalid_response', {
      humanMessage: `Supplier ${supplier} returned unusable rerank results: ${why}`,
      details: { supplier },
    });
  if (!Array.isArray(raw)) throw invalid('no results list');
  const seen = new Set<number>();
  const results: RerankResult[] = raw.map((item: unknown) => {
    const { index, relevance_score: score } = (item ?? {}) as { index?: unknown; relevance_score?: unknown };
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= documents.length)
      throw invalid(`index ${String(index)} is not a document position`);
    if (seen.has(index)) throw invalid(`index ${index} appears twice`);
    seen.add(index);
    if (typeof score !== 'number' || !Number.isFinite(score)) throw invalid(`result ${index} has no numeric relevance_score`);
    return withDocuments ? { index, relevance_score: score, document: { text: documents[index]! } } : { index, relevance_score: score };
  });
  results.sort((a, b) => b.relevance_score - a.relevance_score || a.index - b.index);
  return topN === undefined ? results : results.slice(0, topN);
}
