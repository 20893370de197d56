import type { FastifyInstance } from 'fastify';
import type { GatewayDeps } from '../../deps.js';
import { requireKey } from '../../auth/request-caller.js';

/** `GET /v1/models`: the catalogue models this key may call, in the OpenAI list shape. */
export function registerModelRoutes(app: FastifyInstance, deps: GatewayDeps): void {
  const created = Math.floor(deps.startedAt / 1000);
  app.get('/v1/models', async (request) => {
    const key = requireKey(request);
    const data = deps.catalogue.models
      .filter((m) => !key.allowedModels || key.allowedModels.includes(m.id))
      .map((m) => ({ id: m.id, object: 'model' as const, created, owned_by: m.ownedBy }));
    return { object: 'list', data };
  });
}
