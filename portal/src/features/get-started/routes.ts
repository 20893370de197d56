// Get started and the guide (docs/portal.md "Get started"):
//   GET  /dashboard/get-started   the checklist (HTML/JSON); steps with evidence tick themselves
//   POST /dashboard/get-started/action   {action: tick | untick, step} (or hide | resume | reset)
//   POST /dashboard/get-started/hide | /resume | /reset   no body
//   POST /dashboard/get-started   the same as …/action (the form's first address, kept)
//   GET  /dashboard/guide         calling the gateway with the caller's own base URL and models
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { helpPanels, isHelpHidden } from '../help/panels.js';
import type { PortalDeps } from '../../deps.js';
import { wantsJson } from '../../web/errors.js';
import { requireAction } from '../../web/principal.js';
import { parseBody } from '../../web/validation.js';
import { exampleChatModel } from '../pages/catalogue-view.js';
import { applyChecklistAction, checklistFor, manualSteps, type ChecklistAction } from './checklist.js';

const actionBody = z.discriminatedUnion(
  'action',
  [
    z.strictObject({ action: z.enum(['hide', 'resume', 'reset']) }),
    z.strictObject({
      action: z.enum(['tick', 'untick']),
      step: z.enum(manualSteps, { message: `must be one of ${manualSteps.join(', ')}` }),
    }),
  ],
  { message: 'action must be hide, resume, reset, tick or untick' },
);

export function getStartedRouter(deps: PortalDeps): Router {
  const router = Router();
  const guard = requireAction('dashboard.view');

  router.get('/dashboard/get-started', guard, async (req, res) => {
    const checklist = await checklistFor(deps.database, req.user!);
    if (wantsJson(req)) return res.json(checklist);
    res.render('dashboard/get-started/index', { title: 'Get started', section: 'get-started', checklist });
  });

  const act = async (req: Request, res: Response, action: ChecklistAction) => {
    await applyChecklistAction(deps.database, req.user!.id, action);
    if (wantsJson(req)) return res.json(await checklistFor(deps.database, req.user!));
    res.redirect(303, action.kind === 'hide' ? '/dashboard' : '/dashboard/get-started');
  };

  const byBody = async (req: Request, res: Response) => {
    const body = parseBody(actionBody, req.body);
    await act(
      req,
      res,
      body.action === 'tick' || body.action === 'untick' ? { kind: body.action, step: body.step } : { kind: body.action },
    );
  };
  router.post('/dashboard/get-started/action', guard, byBody);
  router.post('/dashboard/get-started', guard, byBody);
  for (const kind of ['hide', 'resume', 'reset'] as const)
    router.post(`/dashboard/get-started/${kind}`, guard, async (req, res) => {
      // No body is needed; one that names another action is a mistake worth saying.
      parseBody(z.object({ action: z.literal(kind).optional() }), req.body ?? {});
      await act(req, res, { kind });
    });

  router.get('/dashboard/guide', guard, async (req, res) => {
    res.render('dashboard/get-started/guide', {
      title: 'Guide',
      section: 'guide',
      gatewayUrl: deps.gatewayUrlHint,
      model: exampleChatModel(deps.catalogue),
      projectsHelp: helpPanels.projects,
      projectsHelpHidden: await isHelpHidden(deps.database, req.user!.id, 'projects'),
    });
  });

  return router;
}
