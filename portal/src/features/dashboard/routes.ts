// The signed-in dashboard shell: who you are, where to start. The dashboard issue fills it in.
import { Router } from 'express';
import type { PortalDeps } from '../../deps.js';
import { checklistFor } from '../get-started/checklist.js';
import { exampleChatModel } from '../pages/catalogue-view.js';
import { applyPathParamRules } from '../../web/path-params.js';
import { requireAction } from '../../web/principal.js';

/** GET /dashboard. */
export function dashboardRouter(deps: PortalDeps): Router {
  const router = Router();
  // Dashboard routes with `*_id` parameters (keys, reports…) get the 422 rule before any handler.
  applyPathParamRules(router);
  router.get('/dashboard', requireAction('dashboard.view'), async (req, res) => {
    const user = req.user!;
    const checklist = await checklistFor(deps.database, user);
    res.render('dashboard/index', {
      title: 'Dashboard',
      account: {
        name: user.displayName,
        email: user.email,
        role: user.role.replace('_', ' '),
        legalAccepted: user.legalVersion === deps.settings.SVC_LEGAL_VERSION,
        legalVersion: deps.settings.SVC_LEGAL_VERSION,
      },
      gatewayUrl: deps.gatewayUrlHint,
      model: exampleChatModel(deps.catalogue),
      checklist,
    });
  });
  return router;
}
