// POST /v1/rerank (Cohere/Jina style): relevance from word overlap between query and document,
// plus a tiny hash-based term so ties still order deterministically.
import { estimateTokens, hash32, newId } from './deterministic.js';
import { asObject, type Exchange, optionalInt, sendError, sendJson } from './http.js';

/** Handles POST /v1/rerank. */
export function handleRerank(ex: Exchange, raw: unknown): void {
  const body = asObject(raw);
  if (!body) return sendError(ex, 400, 'The request body must be a JSON object.');
  if (typeof body.model !== 'string' || body.model === '') return sendError(ex, 400, "'model' is required.", { param: 'model' });
  if (typeof body.query !== 'string') return sendError(ex, 400, "'query' must be a string.", { param: 'query' });
  const docs = readDocuments(body.documents);
  if (!docs) return sendError(ex, 400, "'documents' must be a non-empty array of strings.", { param: 'documents' });
  const topN = optionalInt(body, 'top_n');
  if (Number.isNaN(topN) || topN === 0) return sendError(ex, 400, "'top_n' must be a positive integer.", { param: 'top_n' });

  const queryWords = words(body.query);
  let tokens = estimateTokens(body.query);
  const scored = docs.map((text, index) => {
    tokens += estimateTokens(text);
    return { index, text, score: relevance(queryWords, text) };
  });
  // Stable sort keeps equal scores in request order.
  scored.sort((a, b) => b.score - a.score);
  const withDocs = body.return_documents === true;
  const results = scored.slice(0, topN ?? scored.length).map((r) => ({
    index: r.index,
    relevance_score: r.score,
    ...(withDocs ? { document: { text: r.text } } : {}),
  }));
  sendJson(ex, 200, { id: newId('rerank-'), model: body.model, results, usage: { total_tokens: tokens } });
}

/** Score in [0, 1]: 0.9 × share of query words found in the document + up to 0.0999 from a hash. */
export function relevance(queryWords: ReadonlySet<string>, doc: string): number {
  const docWords = words(doc);
  let hits = 0;
  for (const w of queryWords) if (docWords.has(w)) hits++;
  const overlap = queryWords.size > 0 ? hits / queryWords.size : 0;
  const jitter = (hash32(doc) % 1000) / 10_000;
  return Math.round((0.9 * overlap + jitter) * 1e6) / 1e6;
}

function words(text: string): Set<string> {
  return new Set(text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []);
}

/** Documents as strings; Cohere's `{text}` objects are accepted too. */
function readDocuments(value: unknown): string[] | null {
  if (!Array.isArray(value) || value.length === 0) return null;
  const out: string[] = [];
  for (const d of value) {
    if (typeof d === 'string') out.push(d);
    else {
      const text = asObject(d)?.text;
      if (typeof text !== 'string') return null;
      out.push(text);
    }
  }
  return out;
}
