import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { ApiError } from '../../../../core/errors/index.js';
import type { GatewayDeps } from '../../deps.js';
import { requireKey } from '../../auth/request-caller.js';
import { validateBody } from '../../http/validate.js';

const modelParams = z.strictObject({ id: z.string().min(1).max(200) });

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
      const data = models.map(anthropicModel);
      return { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
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
