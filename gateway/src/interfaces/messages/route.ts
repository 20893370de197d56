import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ModelCapability, ModelRoute } from '../../../../core/config/index.js';
import { ApiError } from '../../../../core/errors/index.js';
import { requireKey } from '../../auth/request-caller.js';
import type { GatewayDeps } from '../../deps.js';
import { enforce } from '../../enforcement/enforce.js';
import { RequestCancellation } from '../../http/cancellation.js';
import { validateBody } from '../../http/validate.js';
import { sentMoreThanOnce } from '../../http/repeated-header.js';
import { shortAnswerLimitBytes, readTextPrefix } from '../../http/bounded-body.js';
import { requestBytes } from '../../http/request-bytes.js';
import { messagesInputCap } from '../../tokens/input-cap.js';
import { serveChat } from '../../pipeline/inference.js';
import { callSupplier } from '../../pipeline/supplier-call.js';
import { autoModel, resolveAutoModel } from '../../routing/auto-model.js';
import { pickCandidates } from '../../routing/candidates.js';
import { orderCandidates } from '../../routing/order-candidates.js';
import { messagesSessionInputs } from '../../routing/session-inputs.js';
import { tryCandidates } from '../../pipeline/failover.js';
import { chatProtocols } from '../../translate/factory.js';
import { countMessagesTokens, maxCountedTokens } from '../../tokens/count.js';
import { countTokensRequest, messagesRequest, type CountTokensRequest } from './schema.js';

const versionPattern = /^\d{4}-\d{2}-\d{2}$/;

/** The API's `ext-version` (docs/spec-conformance.md 9.2) (and the SDKs' `anthropic-version`): optional, but a date when given. */
function checkVersionHeader(request: FastifyRequest): void {
  for (const name of ['anthropic-version', 'ext-version'] as const) {
    const value = request.headers[name];
    if (value !== undefined && (typeof value !== 'string' || !versionPattern.test(value))) {
      // Node joins a repeated header's values with ", ": say so rather than call the join a bad date.
      if (sentMoreThanOnce(request.raw.rawHeaders, name))
        throw new ApiError('invalid_request', { param: name, humanMessage: `The ${name} header was sent more than once; send one` });
      throw new ApiError('invalid_request', { param: name, humanMessage: `The ${name} header must be a date such as 2023-06-01` });
    }
  }
}

/** Capabilities a messages request needs beyond plain chat (used by `auto`). */
function messagesNeeds(body: CountTokensRequest): ModelCapability[] {
  const needs: ModelCapability[] = [];
  if (body.tools && body.tools.length > 0) needs.push('tools');
  const hasImage = body.messages.some((m) => Array.isArray(m.content) && m.content.some((b) => b.type === 'image'));
  if (hasImage) needs.push('vision');
  return needs;
}

/**
 * Tokens counted when no route counts natively. Counting stops at what the largest context among
 * the routes allows (`maxCountedTokens` where none says): a longer input could not be sent to the
 * model anyway, and the work stays bounded by the limit whatever the body's size.
 */
async function countLocally(body: CountTokensRequest, model: string, routes: readonly ModelRoute[]): Promise<number> {
  const limit = routes.reduce((max, r) => Math.max(max, r.model.contextWindow ?? maxCountedTokens), 0) || maxCountedTokens;
  const tokens = await countMessagesTokens(body, limit);
  if (tokens > limit) {
    throw new ApiError('context_length', {
      humanMessage: `The input has more than ${limit} tokens, more than model ${model} accepts`,
      details: { limit },
    });
  }
  return tokens;
}

/** `POST /v1/messages` and `/v1/messages/count_tokens` (Anthropic messages interface). */
export function registerMessagesRoutes(app: FastifyInstance, deps: GatewayDeps): void {
  app.post('/v1/messages', (request, reply) => {
    checkVersionHeader(request);
    const body = validateBody(messagesRequest, request.body);
    const bytes = requestBytes(request);
    return serveChat(deps, request, reply, {
      client: { family: 'anthropic', body },
      model: body.model,
      region: body.region,
      stream: body.stream === true,
      needs: () => messagesNeeds(body),
      session: messagesSessionInputs(request.raw, body),
      inputBytes: bytes,
      inputCap: messagesInputCap(body, bytes),
      maxOutputTokens: body.max_tokens,
      choices: 1,
      interfaceName: 'messages',
    });
  });

  // Native count for Anthropic-protocol suppliers; a local tokenizer count for the others.
  app.post('/v1/messages/count_tokens', async (request, reply) => {
    checkVersionHeader(request);
    const body = validateBody(countTokensRequest, request.body);
    const key = requireKey(request);
    // Counting is free (no supplier charges for it, so no budget, wallet or audit record), but
    // it is the key's request like any other: the key's rate limit applies, so a key cannot use
    // count_tokens to load suppliers or the gateway without bound (docs/interfaces.md).
    await enforce(deps, { ...key, budgetLimitUsd: null, payerId: null }, 0, String(request.id));
    const model =
      body.model === autoModel
        ? resolveAutoModel(deps.catalogue, key, {
            capabilities: ['chat', ...messagesNeeds(body)],
            promptTokens: 0,
            region: body.region,
            protocols: chatProtocols,
          })
        : body.model;
    const candidates = pickCandidates(deps.catalogue, model, key, body.region, { protocols: chatProtocols, capability: 'chat' });
    void reply.header('x-svc-model', model);
    // Counting locally needs no supplier; an Anthropic-protocol supplier counts natively.
    const native = orderCandidates(candidates, {
      pinnedSupplier: null,
      isOpen: (s) => deps.health.isOpen(s) || deps.credentials.exhaustedByName(s),
      random: Math.random,
    }).filter((r) => r.supplier.protocol === 'anthropic');
    if (native.length === 0) return { input_tokens: await countLocally(body, model, candidates) };
    const upstreamBody: Record<string, unknown> = { ...body };
    delete upstreamBody.region;
    delete upstreamBody.metadata;
    return tryCandidates(
      request,
      native.slice(0, deps.maxAttempts),
      new RequestCancellation(reply),
      deps,
      async (route, _index, signal) => {
        const upstream = await callSupplier(
          deps.upstream,
          route,
          '/messages/count_tokens',
          { ...upstreamBody, model: route.model.upstream },
          { requestId: String(request.id), clientHeaders: request.headers },
          signal,
        );
        const result = (await readTextPrefix(upstream, shortAnswerLimitBytes)
          .then((text) => JSON.parse(text) as unknown)
          .catch(() => undefined)) as { input_tokens?: unknown } | undefined;
        if (typeof result?.input_tokens !== 'number') {
          throw new ApiError('invalid_backend_response', { details: { supplier: route.supplier.name } });
        }
        void reply.header('x-svc-supplier', route.supplier.name).header('x-svc-region', route.supplier.region);
        return { value: { input_tokens: result.input_tokens } };
      },
    );
  });
}
