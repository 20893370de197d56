// The billing feature's routers (docs/billing.md): the signed webhook, mounted before the body
// parsers and the same-origin check (app.ts), and everything else among the feature routers.
import { Router } from 'express';
import type { PortalDeps } from '../../deps.js';
import { billingApiRouter } from './api.js';
import { organisationBillingRouter } from './organisation.js';
import { billingPagesRouter } from './pages.js';
import { retiredBillingRouter } from './retired.js';

export { billingWebhookRouter } from './webhook.js';

/** Pages, JSON API and the retired endpoints. */
export function billingRouter(deps: PortalDeps): Router {
  const router = Router();
  router.use(retiredBillingRouter());
  router.use(billingApiRouter(deps));
  router.use(billingPagesRouter(deps));
  router.use(organisationBillingRouter(deps));
  return router;
}
