// The invite landing page: who invited you where, and a button to sign in (or sign up) to accept.
import { Router } from 'express';
import { ApiError } from '../../../../core/errors/index.js';
import type { PortalDeps } from '../../deps.js';
import { applyPathParamRules } from '../../web/path-params.js';

const statusText = {
  pending: undefined,
  accepted: 'This invitation has already been accepted. Sign in to continue.',
  revoked: 'This invitation was withdrawn. Ask your administrator for a new one.',
  expired: 'This invitation has expired. Ask your administrator for a new one.',
} as const;

/** GET /invite/:token. */
export function inviteRouter(deps: PortalDeps): Router {
  const router = Router();
  applyPathParamRules(router);
  router.get('/invite/:token', async (req, res) => {
    const token = String(req.params.token);
    const invite = await deps.invites.findBySecret(token, new Date(deps.clock()));
    if (!invite) throw new ApiError('not_found', { humanMessage: 'This invitation link is not valid. Check that you copied all of it.' });
    res.render('pages/invite', {
      title: `Join ${invite.organisationName}`,
      invite: {
        organisationName: invite.organisationName,
        email: invite.email,
        role: invite.role.replace('_', ' '),
        expires: invite.expiresAt.toISOString().slice(0, 10),
      },
      problem: statusText[invite.status],
      returnTo: `/invite/${encodeURIComponent(token)}`,
    });
  });
  return router;
}
