import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../../../../core/errors/index.js';
import type { GatewayDeps } from '../../deps.js';
import { validateBody } from '../../http/validate.js';
import { jsonAttempt } from '../../pipeline/json-exchange.js';
import { serveRouted } from '../../pipeline/serve-routed.js';
import { maxPrice } from '../../routing/worst-case.js';
import { countOrBound } from '../../tokens/count.js';
import { measureInputs } from './inputs.js';
import { embeddingsRequest } from './schema.js';
import { encodeEmbedding } from './vectors.js';

interface UpstreamEmbeddings {
  data?: { index?: unknown; embedding?: unknown }[];
  usage?: { prompt_tokens?: unknown };
}

/** `POST /v1/embeddings` through the shared pipeline to OpenAI-protocol suppliers. */
async function serveEmbeddings(deps: GatewayDeps, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const body = validateBody(embeddingsRequest, request.body);
  const inputs = measureInputs(body.input);
  const format = body.encoding_format ?? 'float';
  const { region: _region, ...forwarded } = body;
  return serveRouted(deps, request, reply, {
    interfaceName: 'embeddings',
    model: body.model,
    region: body.region,
    needs: { protocols: ['openai'], capability: 'embeddings' },
    worstCaseUsd: (compliant) => (inputs.tokenBound * maxPrice(compliant, (r) => r.model.inputUsdPerMtok)) / 1e6,
    admitted: () => inputs.check(),
    attempt: jsonAttempt(deps, request, reply, {
      publicModel: body.model,
      path: '/embeddings',
      // Up to ~4,096 dimensions as JSON floats (~22 bytes each) per input: more than the gateway's
      // default answer limit once there are a few hundred inputs.
      answerLimitBytes: 1024 * 1024 + inputs.count * 96 * 1024,
      upstreamBody: (route) => ({ ...forwarded, model: route.model.upstream, encoding_format: format }),
      answer: async (json, route) => {
        const supplier = route.supplier.name;
        const upstream = json as UpstreamEmbeddings;
        if (!Array.isArray(upstream.data) || upstream.data.length !== inputs.count) {
          throw new ApiError('upstream_invalid_response', {
            humanMessage: `Supplier ${supplier} returned ${Array.isArray(upstream.data) ? upstream.data.length : 'no'} embeddings for ${inputs.count} inputs`,
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
        // A supplier reporting more than the inputs can be is charged their bound (the reservation).
        const tokens =
          typeof reported === 'number' && Number.isInteger(reported) && reported >= 0
            ? Math.min(reported, inputs.tokenBound)
            : await countOrBound(() => inputs.countTokens(), inputs.tokenBound, request);
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
