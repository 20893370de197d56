// Legal acceptance against the version in force (SVC_LEGAL_VERSION).
import { noteActivity } from '../../web/activity.js';
import { Router } from 'express';
import { z } from 'zod';
import { ApiError } from '../../../../core/errors/index.js';
import type { PortalDeps } from '../../deps.js';
import { requireAction } from '../../web/principal.js';
import { parseBody } from '../../web/validation.js';

const acceptBody = z.object({ version: z.string().max(32).optional() });

/** POST /api/legal/accept, GET /api/legal/status. */
export function legalRouter(deps: PortalDeps): Router {
  const router = Router();
  const current = deps.settings.SVC_LEGAL_VERSION;
  router.get('/api/legal/status', requireAction('legal.accept'), (req, res) => {
    const accepted = req.user!.legalVersion;
    res.json({ current_version: current, accepted_version: accepted, accepted: accepted === current });
  });
  router.post('/api/legal/accept', requireAction('legal.accept'), async (req, res) => {
    const { version } = parseBody(acceptBody, req.body);
    // Accepting a version other than the one in force would record consent to words not shown.
    if (version !== undefined && version !== current)
      throw new ApiError('validation_error', {
        status: 422,
        param: 'version',
        humanMessage: `The version in force is ${current}`,
        details: { detail: [{ loc: ['body', 'version'], msg: `must be ${current}`, type: 'invalid_value' }] },
      });
    await deps.users.acceptLegal(req.user!.id, current, new Date(deps.clock()));
    await noteActivity(deps, { userId: req.user!.id, kind: 'terms_accepted', summary: `Accepted the terms, version ${current}` });
    res.json({ current_version: current, accepted_version: current, accepted: true });
  });
  return router;
}
