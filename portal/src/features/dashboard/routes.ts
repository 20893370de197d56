// The signed-in overview: who you are, what is left to set up, and how to make a first call or,
// once one was made, the last 30 days of usage.
import { Router } from 'express';
import type { PortalDeps } from '../../deps.js';
import { checklistFor } from '../get-started/checklist.js';
import { exampleChatModel } from '../pages/catalogue-view.js';
import { applyPathParamRules } from '../../web/path-params.js';
import { requireAction } from '../../web/principal.js';
import { usageReport } from '../../../../core/usage/index.js';
import { viewScope } from '../keys/scope.js';
import { usageRange } from '../usage/range.js';

/** GET /dashboard. */
export function dashboardRouter(deps: PortalDeps): Router {
  const router = Router();
  // Dashboard routes with `*_id` parameters (keys, reports…) get the 422 rule before any handler.
  applyPathParamRules(router);
  router.get('/dashboard', requireAction('dashboard.view'), async (req, res) => {
    const user = req.user!;
    const checklist = await checklistFor(deps.database, user);
    // Before the first request, how to make one; after it, the last 30 days as the usage page counts them.
    const calling = checklist.steps.find((s) => s.id === 'first_request')?.done === true;
    const recent = calling
      ? await usageReport(deps.database, {
          scope: viewScope(req),
          ...usageRange('day', undefined, undefined, new Date(deps.clock())),
          granularity: 'day',
        })
      : undefined;
    res.render('dashboard/index', {
      title: 'Dashboard',
      section: 'overview',
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
      recent: recent?.totals,
    });
  });
  return router;
}
