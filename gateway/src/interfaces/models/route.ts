import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { ApiError } from '../../../../core/errors/index.js';
import type { GatewayDeps } from '../../deps.js';
import { requireKey } from '../../auth/request-caller.js';
import { validateBody, validateQuery } from '../../http/validate.js';

const modelParams = z.strictObject({ id: z.string().min(1).max(200) });

/** The Anthropic list's paging (its API reference): a page of `limit` ids after or before a given one. */
const anthropicPage = z.looseObject({
  limit: z.coerce.number().int().min(1).max(1000).default(20),
  after_id: z.string().min(1).max(200).optional(),
  before_id: z.string().min(1).max(200).optional(),
});

/** One page of the list, in catalogue order, as the Anthropic API pages it (and its SDK follows `has_more`). */
function pageOf<T extends { id: string }>(models: T[], query: unknown): { page: T[]; hasMore: boolean } {
  const { limit, after_id, before_id } = validateQuery(anthropicPage, query);
  if (after_id !== undefined && before_id !== undefined) {
    throw new ApiError('invalid_request', { param: 'before_id', humanMessage: 'Give after_id or before_id, not both' });
  }
  const anchor = after_id ?? before_id;
  const at = anchor === undefined ? -1 : models.findIndex((m) => m.id === anchor);
  if (anchor !== undefined && at < 0) {
    throw new ApiError('invalid_request', {
      param: after_id ? 'after_id' : 'before_id',
      humanMessage: `There is no model ${anchor} in this list`,
    });
  }
  if (before_id !== undefined) {
    const start = Math.max(0, at - limit);
    return { page: models.slice(start, at), hasMore: start > 0 };
  }
  const page = models.slice(at + 1, at + 1 + limit);
  return { page, hasMore: at + 1 + limit < models.length };
}

/**
 * `GET /v1/models`: the catalogue models this key may call, and `GET /v1/models/{id}` one of them
 * (the SDKs' models.retrieve()). OpenAI shape by default; the Anthropic shape when the client
 * sends `anthropic-version` (the Anthropic SDK).
 */
export function registerModelRoutes(app: FastifyInstance, deps: GatewayDeps): void {
  const created = Math.floor(deps.startedAt / 1000);
  const createdAt = new Date(deps.startedAt).toISOString();
  const modelsOf = (request: FastifyRequest) => {
    const key = requireKey(request);
    return [{ id: 'auto', ownedBy: 'svc' }, ...deps.catalogue.models].filter(
      (m) => m.id === 'auto' || !key.allowedModels || key.allowedModels.includes(m.id),
    );
  };
  const anthropicShape = (request: FastifyRequest) => request.headers['anthropic-version'] !== undefined;
  const anthropicModel = (m: { id: string }) => ({ type: 'model' as const, id: m.id, display_name: m.id, created_at: createdAt });
  const openAiModel = (m: { id: string; ownedBy: string }) => ({ id: m.id, object: 'model' as const, created, owned_by: m.ownedBy });

  app.get('/v1/models', async (request) => {
    const models = modelsOf(request);
    if (anthropicShape(request)) {
      const { page, hasMore } = pageOf(models, request.query);
      const data = page.map(anthropicModel);
      return { data, has_more: hasMore, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
    }
    return { object: 'list', data: models.map(openAiModel) };
  });

  app.get('/v1/models/:id', async (request) => {
    const { id } = validateBody(modelParams, request.params);
    const model = modelsOf(request).find((m) => m.id === id);
    // A model the key may not call is as unknown to it as one the catalogue lacks.
    if (!model) throw new ApiError('model_not_found', { param: 'id', humanMessage: `There is no model ${id} for this key` });
    return anthropicShape(request) ? anthropicModel(model) : openAiModel(model);
  });
}
