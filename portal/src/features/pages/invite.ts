// The invite landing page: who invited you where, and a button to sign in (or sign up) to accept.
import { Router } from 'express';
import { ApiError } from '../../../../core/errors/index.js';
import type { PortalDeps } from '../../deps.js';
import { KeyAnnouncer } from '../../../../core/keys/index.js';
import { noteActivity } from '../../web/activity.js';
import { wantsJson } from '../../web/errors.js';
import { applyPathParamRules } from '../../web/path-params.js';
import { requireAction } from '../../web/principal.js';
import { inviteStanding, type InviteSummary } from '../../../../core/identity/invites.js';
import type { Role } from '../../../../core/identity/roles.js';
import { forgetOrganisationCounters } from '../../../../core/organisations/index.js';

const statusText = {
  pending: undefined,
  accepted: 'This invitation has already been accepted.',
  revoked: 'This invitation was withdrawn. Ask your administrator for a new one.',
  expired: 'This invitation has expired. Ask your administrator for a new one.',
} as const;

/** GET /invite/:token (the landing page) and POST /invite/:token/accept. */
export function inviteRouter(deps: PortalDeps): Router {
  const router = Router();
  applyPathParamRules(router);
  const announcer = new KeyAnnouncer(deps.store, { logger: (facts, message) => deps.logger.warn(facts, message) });
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
      ...acceptance(invite, req.user),
      signedInAs: req.user?.email,
      acceptAction: `/invite/${encodeURIComponent(token)}/accept`,
    });
  });

  // Accepting: the signed-in user joins the organisation (core/identity/invites.ts accept).
  router.post('/invite/:token/accept', requireAction('dashboard.view'), async (req, res) => {
    const user = req.user!;
    const hashes = await deps.invites.accept(String(req.params.token), user, new Date(deps.clock()));
    await announcer.announceAll(hashes);
    await noteActivity(deps, { userId: user.id, kind: 'invite_accepted', summary: 'Accepted an invitation and joined an organisation' });
    const joined = await deps.users.findById(user.id);
    // Their keys joined with this month's spend (core/organisations forgetOrganisationCounters).
    await forgetOrganisationCounters(deps.store, [user.organisationId, joined?.organisationId ?? null], new Date(deps.clock())).catch(
      (error: unknown) => deps.logger.warn({ err: error }, 'joined; the organisation spend counters are rebuilt when the store is back'),
    );
    if (wantsJson(req)) return res.json({ ok: true, organisation_id: joined?.organisationId ?? null, role: joined?.role });
    res.redirect(303, '/dashboard');
  });
  return router;
}

/**
 * What the page offers a signed-in person with the invited address (core/identity/invites.ts
 * inviteStanding): to accept, unless accepting would change nothing (the page says so instead of a
 * button that silently did nothing) or cannot work (a member of another organisation, or a sender
 * who may no longer grant the role: accepting is refused, so the page says why first).
 */
function acceptance(
  invite: InviteSummary,
  user: { email: string; role: Role; organisationId: number | null } | undefined,
): { canAccept: boolean; standing?: string } {
  switch (inviteStanding(invite, user)) {
    case 'acceptable':
      return { canAccept: true };
    case 'member_already':
      return { canAccept: false, standing: `You are a member of ${invite.organisationName} already, as ${user!.role.replace('_', ' ')}.` };
    case 'sender_cannot_grant':
      return {
        canAccept: false,
        standing: `Whoever sent this invitation can no longer make you ${invite.role.replace('_', ' ')} of ${invite.organisationName} (their role or account changed since), so it cannot be accepted. Ask one of its administrators for a new invitation.`,
      };
    case 'other_organisation':
      return {
        canAccept: false,
        standing: 'You belong to another organisation: a platform administrator can move you (accepting here is refused).',
      };
    default:
      return { canAccept: false };
  }
}
