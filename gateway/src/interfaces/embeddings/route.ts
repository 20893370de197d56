import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isWithinTokenLimit } from 'gpt-tokenizer';
import { ApiError } from '../../../../core/errors/index.js';
import type { GatewayDeps } from '../../deps.js';
import { validateBody } from '../../http/validate.js';
import { jsonAttempt } from '../../pipeline/json-exchange.js';
import { serveRouted } from '../../pipeline/serve-routed.js';
import { maxPrice } from '../../routing/worst-case.js';
import { embeddingsRequest, type EmbeddingsRequest } from './schema.js';
import { encodeEmbedding } from './vectors.js';

/** Tokens allowed in one input string (spec part 8). */
export const maxTokensPerInput = 2048;

/**
 * Token counts of each input, checking the per-string limit. Strings are counted with the
 * gateway's tokenizer (o200k_base; a model's own tokenizer may differ by a few percent), token
 * arrays by their length. The error names the first offending input by its index.
 */
export function countInputTokens(input: EmbeddingsRequest['input']): number[] {
  const { items, single } = inputsOf(input);
  return items.map((item, index) => {
    const param = single ? 'input' : `input[${index}]`;
    if (typeof item !== 'string') {
      if (item.length > maxTokensPerInput) throw tooLong(param, item.length);
      return item.length;
    }
    if (item.length === 0) throw new ApiError('invalid_input', { param, humanMessage: `${param} is an empty string; every input must have text` });
    const tokens = isWithinTokenLimit(item, maxTokensPerInput);
    if (tokens === false) throw tooLong(param, countAll(item));
    return tokens;
  });
}

/** The four accepted input shapes as a list; `single` when the body held one input, not a list. */
function inputsOf(input: EmbeddingsRequest['input']): { items: readonly (string | number[])[]; single: boolean } {
  if (typeof input === 'string') return { items: [input], single: true };
  if (input.every((x) => typeof x === 'number')) return { items: [input as number[]], single: true };
  return { items: input as (string | number[])[], single: false };
}

function countAll(text: string): number {
  return isWithinTokenLimit(text, Number.MAX_SAFE_INTEGER) || 0;
}

function tooLong(param: string, tokens: number): ApiError {
  return new ApiError('invalid_input', {
    param,
    humanMessage: `${param} has ${tokens} tokens; each input may have at most ${maxTokensPerInput} tokens`,
    details: { tokens, limit: maxTokensPerInput },
  });
}

interface UpstreamEmbeddings {
  data?: { index?: unknown; embedding?: unknown }[];
  usage?: { prompt_tokens?: unknown };
}

/** `POST /v1/embeddings` through the shared pipeline to OpenAI-protocol suppliers. */
function serveEmbeddings(deps: GatewayDeps, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const body = validateBody(embeddingsRequest, request.body);
  const counts = countInputTokens(body.input);
  const localTokens = counts.reduce((a, b) => a + b, 0);
  const format = body.encoding_format ?? 'float';
  const { region: _region, ...forwarded } = body;
  return serveRouted(deps, request, reply, {
    interfaceName: 'embeddings',
    model: body.model,
    region: body.region,
    needs: { protocols: ['openai'], capability: 'embeddings' },
    worstCaseUsd: (compliant) => (localTokens * maxPrice(compliant, (r) => r.model.inputUsdPerMtok)) / 1e6,
    attempt: jsonAttempt(deps, request, reply, {
      publicModel: body.model,
      path: '/embeddings',
      upstreamBody: (route) => ({ ...forwarded, model: route.model.upstream, encoding_format: format }),
      answer: (json, route) => {
        const supplier = route.supplier.name;
        const upstream = json as UpstreamEmbeddings;
        if (!Array.isArray(upstream.data) || upstream.data.length !== counts.length) {
          throw new ApiError('upstream_invalid_response', {
            humanMessage: `Supplier ${supplier} returned ${Array.isArray(upstream.data) ? upstream.data.length : 'no'} embeddings for ${counts.length} inputs`,
            details: { supplier },
          });
        }
        const data = upstream.data.map((item, position) => ({
          object: 'embedding',
          index: typeof item.index === 'number' ? item.index : position,
          embedding: encodeEmbedding(item.embedding, format, supplier),
        }));
        data.sort((a, b) => a.index - b.index);
        const reported = upstream.usage?.prompt_tokens;
        const tokens = typeof reported === 'number' && Number.isInteger(reported) && reported >= 0 ? reported : localTokens;
        return {
          body: { object: 'list', data, model: body.model, usage: { prompt_tokens: tokens, total_tokens: tokens } },
          usage: { inputTokens: tokens, outputTokens: 0, cachedInputTokens: 0 },
        };
      },
    }),
  });
}

/** Registers `POST /v1/embeddings`. */
export function registerEmbeddingsRoutes(app: FastifyInstance, deps: GatewayDeps): void {
  app.post('/v1/embeddings', (request, reply) => serveEmbeddings(deps, request, reply));
}
