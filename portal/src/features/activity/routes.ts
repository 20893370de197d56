// /dashboard/activity: what happened in the signed-in user's account, newest first, from the
// activity log every portal action writes to (sign-ins, keys, terms, settings).
import { Router } from 'express';
import { z } from 'zod';
import type { PortalDeps } from '../../deps.js';
import { wantsJson } from '../../web/errors.js';
import { requireAction } from '../../web/principal.js';
import { validate, wholeNumberParam } from '../../web/validation.js';

const query = z.strictObject({
  before: z
    .string()
    .regex(/^[1-9][0-9]{0,15}$/, 'must be a positive integer')
    .transform(Number)
    .optional(),
  limit: wholeNumberParam(100).optional(),
});

/** GET /dashboard/activity (HTML, or JSON to `Accept: application/json`). */
export function activityRouter(deps: PortalDeps): Router {
  const router = Router();
  router.get('/dashboard/activity', requireAction('dashboard.view'), validate({ query }), async (req, res) => {
    const { before, limit } = req.valid!.query as z.infer<typeof query>;
    const page = await deps.activity.listForUser(req.user!.id, { limit: limit ?? 50, ...(before !== undefined && { before }) });
    if (wantsJson(req))
      return res.json({
        object: 'list',
        data: page.data.map((a) => ({
          id: a.id,
          kind: a.kind,
          summary: a.summary,
          by_administrator: a.actorUserId !== null,
          created: a.createdAt,
          details: a.details,
        })),
        next_before: page.nextBefore,
        has_more: page.nextBefore !== null,
      });
    res.render('dashboard/activity', { title: 'Activity', section: 'activity', entries: page.data, nextBefore: page.nextBefore });
  });
  return router;
}
