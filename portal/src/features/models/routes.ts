// The dashboard's model catalogue (docs/portal.md "Dashboard: models"): every model of the
// catalogue with its prices, capabilities, regions and context window, beside what the caller
// observed of it through the keys they can see over `days` (default 30).
//   GET /dashboard/models               list (HTML, or JSON to Accept: application/json)
//   GET /dashboard/models/{model_id}    one model: each supplier route with its prices and the
//                                       caller's observations per supplier; unknown id → 404
import { Router } from 'express';
import { z } from 'zod';
import { ApiError } from '../../../../core/errors/index.js';
import { modelObservations } from '../../../../core/usage/index.js';
import type { PortalDeps } from '../../deps.js';
import { wantsJson } from '../../web/errors.js';
import { requireAction } from '../../web/principal.js';
import { validate, wholeNumberParam } from '../../web/validation.js';
import { viewScope } from '../keys/scope.js';
import { formatPrice, publicModels } from '../pages/catalogue-view.js';

const daysQuery = z.strictObject({
  days: wholeNumberParam(365, 'days').optional(),
});
const modelParams = z.object({ model_id: z.string().min(1).max(200, 'must be at most 200 characters') });

export function modelsRouter(deps: PortalDeps): Router {
  const router = Router();
  const guard = requireAction('usage.view');
  const models = publicModels(deps.catalogue);
  const since = (days: number) => new Date(deps.clock() - days * 86_400_000);

  router.get('/dashboard/models', guard, validate({ query: daysQuery }), async (req, res) => {
    const days = (req.valid!.query as { days?: number }).days ?? 30;
    const observed = new Map((await modelObservations(deps.database, viewScope(req), since(days))).map((o) => [o.model, o]));
    const data = models.map((m) => ({
      model_id: m.id,
      owned_by: m.ownedBy,
      capabilities: m.capabilities,
      regions: m.regions,
      prices: m.prices,
      context_window: m.contextWindow ?? null,
      observed: observed.get(m.id) ?? null,
    }));
    if (wantsJson(req)) return res.json({ object: 'list', days, data });
    res.render('dashboard/models/list', { title: 'Models', section: 'models', days, data });
  });

  router.get('/dashboard/models/:model_id', guard, validate({ params: modelParams, query: daysQuery }), async (req, res) => {
    const id = (req.valid!.params as { model_id: string }).model_id;
    const days = (req.valid!.query as { days?: number }).days ?? 30;
    const model = models.find((m) => m.id === id);
    const routes = deps.catalogue.routes.get(id);
    if (!model || !routes) throw new ApiError('not_found', { humanMessage: `There is no model ${id} in the catalogue` });
    const scope = viewScope(req);
    const [observations, [total]] = await Promise.all([
      modelObservations(deps.database, scope, since(days), { model: id, bySupplier: true }),
      modelObservations(deps.database, scope, since(days), { model: id }),
    ]);
    const suppliers = routes.map((r) => ({
      supplier: r.supplier.name,
      region: r.supplier.region,
      priority: r.supplier.priority,
      input_usd_per_mtok: r.model.inputUsdPerMtok,
      output_usd_per_mtok: r.model.outputUsdPerMtok,
      cached_input_usd_per_mtok: r.model.cachedInputUsdPerMtok,
      max_output_tokens: r.model.maxOutputTokens ?? null,
      observed: observations.find((o) => o.supplier === r.supplier.name) ?? null,
    }));
    const body = {
      model_id: id,
      owned_by: model.ownedBy,
      capabilities: model.capabilities,
      regions: model.regions,
      prices: model.prices,
      context_window: model.contextWindow ?? null,
      days,
      observed: total ?? null,
      suppliers,
    };
    if (wantsJson(req)) return res.json(body);
    res.render('dashboard/models/detail', { title: id, section: 'models', model: body, price: formatPrice });
  });

  return router;
}
