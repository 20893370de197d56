import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { GatewayDeps } from '../../deps.js';
import { validateBody } from '../../http/validate.js';
import { jsonAttempt } from '../../pipeline/json-exchange.js';
import { serveRouted } from '../../pipeline/serve-routed.js';
import { maxPrice } from '../../routing/worst-case.js';
import { countOrBound, countTokensSliced } from '../../tokens/count.js';
import { normaliseResults } from './results.js';
import { rerankRequest } from './schema.js';

interface RerankUsage {
  usage?: { total_tokens?: unknown };
  meta?: { billed_units?: { total_tokens?: unknown } };
}

/** Tokens the supplier reports (Jina `usage`, Cohere `meta.billed_units`), if it reports any. */
function reportedTokens(json: unknown): number | undefined {
  const { usage, meta } = json as RerankUsage;
  const value = usage?.total_tokens ?? meta?.billed_units?.total_tokens;
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : undefined;
}

/** Special tokens a reranker adds around one query–document pair (CLS, SEP…), over the bytes. */
const specialTokensPerPair = 8;

/** `POST /v1/rerank` through the shared pipeline to suppliers that speak the common rerank format. */
function serveRerank(deps: GatewayDeps, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const body = validateBody(rerankRequest, request.body);
  const documents = body.documents.map((d) => (typeof d === 'string' ? d : d.text));
  // A token covers at least one UTF-8 byte: the byte count bounds the reservation without
  // tokenizing on the event loop; the exact count is made only if the supplier reports no usage.
  // A cross-encoder reads the query with each document, with a few special tokens per pair. A
  // supplier reporting more is charged the bound: the reservation is never overspent.
  const pairBytes = Buffer.byteLength(body.query) + specialTokensPerPair;
  const tokenBound = documents.reduce((sum, d) => sum + Buffer.byteLength(d) + pairBytes, 0);
  // Counted as the bound assumes: the query with each document.
  const countTokens = () => countTokensSliced(documents.flatMap((document) => [body.query, document]));
  const { region: _region, ...forwarded } = body;
  return serveRouted(deps, request, reply, {
    interfaceName: 'rerank',
    model: body.model,
    region: body.region,
    needs: { protocols: ['openai'], capability: 'rerank' },
    worstCaseUsd: (compliant) => (tokenBound * maxPrice(compliant, (r) => r.model.inputUsdPerMtok)) / 1e6,
    attempt: jsonAttempt(deps, request, reply, {
      publicModel: body.model,
      path: '/rerank',
      upstreamBody: (route) => ({ ...forwarded, model: route.model.upstream, documents }),
      answer: async (json, route) => {
        const results = normaliseResults(json, documents, body.top_n, body.return_documents === true, route.supplier.name);
        const reported = reportedTokens(json);
        const tokens = reported === undefined ? await countOrBound(countTokens, tokenBound, request) : Math.min(reported, tokenBound);
        const id = (json as { id?: unknown }).id;
        return {
          body: { ...(typeof id === 'string' && { id }), model: body.model, results, usage: { total_tokens: tokens } },
          usage: { inputTokens: tokens, outputTokens: 0, cachedInputTokens: 0 },
        };
      },
    }),
  });
}

/** Registers `POST /v1/rerank`. */
export function registerRerankRoutes(app: FastifyInstance, deps: GatewayDeps): void {
  app.post('/v1/rerank', (request, reply) => serveRerank(deps, request, reply));
}
