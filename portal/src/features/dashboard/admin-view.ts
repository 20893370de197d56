// How an administrator's dashboard views are scoped, kept in the session:
//   POST /dashboard/toggle-admin-mode   admins: switch between the role's scope and their own data
//   POST /dashboard/set-admin-org       platform admins: {org_id} filters the views to one
//                                       organisation ("" or 0 clears); legacy alias
//   POST /dashboard/set-admin-domain    {domain} (the organisation's slug) for older clients
// keys/scope.ts viewScope() applies both to keys, usage, the request log and models.
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { ApiError } from '../../../../core/errors/index.js';
import { roleAtLeast } from '../../../../core/identity/index.js';
import type { PortalDeps } from '../../deps.js';
import { wantsJson } from '../../web/errors.js';
import { requireAction } from '../../web/principal.js';
import { parseBody } from '../../web/validation.js';

const orgBody = z.object({
  org_id: z.union(
    [
      z.number().int().nonnegative(),
      z.literal(''),
      z
        .string()
        .regex(/^[0-9]{1,10}$/, 'must be an organisation id')
        .transform(Number),
    ],
    {
      message: 'must be an organisation id, or empty to clear',
    },
  ),
});
const domainBody = z.object({ domain: z.string().trim().max(100, 'must be at most 100 characters') });

export function adminViewRouter(deps: PortalDeps): Router {
  const router = Router();
  const signedIn = requireAction('dashboard.view');

  const answer = async (req: Request, res: Response) => {
    // Saved before answering: express-session otherwise saves while the last byte of the answer is
    // held back, and a client that acts on the status alone (or a fast redirect) can race it.
    await new Promise<void>((resolve, reject) => req.session.save((error) => (error ? reject(error as Error) : resolve())));
    const state = { admin_mode: req.session.adminMode !== false, admin_org_id: req.session.adminOrgId ?? null };
    if (wantsJson(req)) return res.json(state);
    res.redirect(303, '/dashboard');
  };

  router.post('/dashboard/toggle-admin-mode', signedIn, async (req, res) => {
    if (req.user!.role === 'member') throw new ApiError('forbidden', { humanMessage: 'Only administrators have an admin mode' });
    req.session.adminMode = req.session.adminMode === false;
    await answer(req, res);
  });

  /** Before anything is looked up: a lookup's answer would tell others which organisations exist. */
  const mustBePlatformAdmin = (req: Request) => {
    if (!roleAtLeast(req.user!.role, 'platform_admin'))
      throw new ApiError('forbidden', { humanMessage: 'Only platform admins choose an organisation to view' });
  };

  const setOrganisation = async (req: Request, res: Response, organisationId: number | null) => {
    mustBePlatformAdmin(req);
    if (organisationId === null) delete req.session.adminOrgId;
    else {
      const exists = await deps.database('organisations').where({ id: organisationId }).first('id');
      if (!exists) throw new ApiError('not_found', { param: 'org_id', humanMessage: `There is no organisation ${organisationId}` });
      req.session.adminOrgId = organisationId;
    }
    await answer(req, res);
  };

  router.post('/dashboard/set-admin-org', signedIn, async (req, res) => {
    const { org_id: id } = parseBody(orgBody, req.body);
    await setOrganisation(req, res, id === '' || id === 0 ? null : id);
  });

  router.post('/dashboard/set-admin-domain', signedIn, async (req, res) => {
    mustBePlatformAdmin(req);
    const { domain } = parseBody(domainBody, req.body);
    if (domain === '') return setOrganisation(req, res, null);
    const org = (await deps.database('organisations').whereRaw('lower(slug) = lower(?)', [domain]).first('id')) as
      { id: number } | undefined;
    if (!org) throw new ApiError('not_found', { param: 'domain', humanMessage: `There is no organisation ${domain}` });
    await setOrganisation(req, res, org.id);
  });

  return router;
}
