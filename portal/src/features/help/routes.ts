// Help updates (docs/portal.md "Help panels"):
//   POST /dashboard/autorouter/help, /dashboard/projects/help, /dashboard/qualitative/help
//        {action: hide | show}  hides or shows that page's help panel for the signed-in user.
// JSON callers get {panel, hidden}; forms go back to the panel's page.
import { Router } from 'express';
import { z } from 'zod';
import type { PortalDeps } from '../../deps.js';
import { wantsJson } from '../../web/errors.js';
import { requireAction } from '../../web/principal.js';
import { parseBody } from '../../web/validation.js';
import { helpPanels, setHelpHidden, type HelpPanel } from './panels.js';

const helpBody = z.object({ action: z.enum(['hide', 'show'], { message: 'must be hide or show' }) });

export function helpRouter(deps: PortalDeps): Router {
  const router = Router();
  for (const panel of Object.keys(helpPanels) as HelpPanel[]) {
    router.post(`/dashboard/${panel}/help`, requireAction('dashboard.view'), async (req, res) => {
      const { action } = parseBody(helpBody, req.body);
      const hidden = action === 'hide';
      await setHelpHidden(deps.database, req.user!.id, panel, hidden);
      if (wantsJson(req)) return res.json({ panel, hidden });
      res.redirect(303, helpPanels[panel].page);
    });
  }
  return router;
}
