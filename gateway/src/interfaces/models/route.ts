import type { FastifyInstance } from 'fastify';
import type { GatewayDeps } from '../../deps.js';
import { requireKey } from '../../auth/request-caller.js';

/**
 * `GET /v1/models`: the catalogue models this key may call. OpenAI list shape by default; the
 * Anthropic shape when the client sends `anthropic-version` (the Anthropic SDK's models.list()).
 */
export function registerModelRoutes(app: FastifyInstance, deps: GatewayDeps): void {
  const created = Math.floor(deps.startedAt / 1000);
  const createdAt = new Date(deps.startedAt).toISOString();
  app.get('/v1/models', async (request) => {
    const key = requireKey(request);
    const models = [{ id: 'auto', ownedBy: 'svc' }, ...deps.catalogue.models].filter(
      (m) => m.id === 'auto' || !key.allowedModels || key.allowedModels.includes(m.id),
    );
    if (request.headers['anthropic-version'] !== undefined) {
      const data = models.map((m) => ({ type: 'model' as const, id: m.id, display_name: m.id, created_at: createdAt }));
      return { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
    }
    return { object: 'list', data: models.map((m) => ({ id: m.id, object: 'model' as const, created, owned_by: m.ownedBy })) };
  });
}
