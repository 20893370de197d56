// Invites (docs/administration.md "Invites"):
//   GET  /dashboard/admin/users/invite                 the form and the invites in the caller's scope
//   POST /dashboard/admin/users/invite                 {email, role, org_id?, department_id?}: emails the link
//   POST /dashboard/admin/users/invite/{invite_id}/revoke   pending → revoked (any other state: 409)
// Department admins invite into their own department; nobody invites above their own role.
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { ApiError } from '../../../../core/errors/index.js';
import { mayGrantInvite, roleRank, roles, tokenLifetimeMs, userScopeOf, type Role } from '../../../../core/identity/index.js';
import type { PortalDeps } from '../../deps.js';
import { actionMessage } from '../../mail/mailer.js';
import { wantsJson } from '../../web/errors.js';
import { emptyFormPage, withFormPage, type FormPage } from '../../web/form-issues.js';
import { applyPathParamRules } from '../../web/path-params.js';
import { idField, targetOrganisation } from '../../web/target-organisation.js';
import { parseBody } from '../../web/validation.js';
import { adminRoute } from './route-table.js';
import { emailAddress } from '../../../../core/identity/email.js';

const inviteBody = z.object({
  email: emailAddress,
  role: z.enum(roles, { message: `must be one of ${roles.join(', ')}` }).default('member'),
  org_id: idField.optional(),
  department_id: z
    .union([idField, z.literal(''), z.null()])
    .transform((v) => (v === '' ? null : v))
    .optional(),
});

interface InviteRow {
  id: number;
  email: string;
  role: Role;
  status: string;
  organisation_id: number;
  organisation_name: string;
  department_id: number | null;
  department_name: string | null;
  invited_by: number | null;
  expires_at: Date;
  created_at: Date;
}

/** An invite as an administrator sees it: the state shown is `expired` once a pending one is past its date. */
const present = (row: InviteRow, now: number) => ({
  id: row.id,
  email: row.email,
  role: row.role,
  status: row.status === 'pending' && new Date(row.expires_at).getTime() <= now ? 'expired' : row.status,
  organisation_id: row.organisation_id,
  organisation_name: row.organisation_name,
  department_id: row.department_id,
  department_name: row.department_name,
  invited_by: row.invited_by,
  expires_at: new Date(row.expires_at).toISOString(),
  created_at: new Date(row.created_at).toISOString(),
});

export function adminInvitesRouter(deps: PortalDeps): Router {
  const router = Router();
  applyPathParamRules(router);
  const knex = deps.database;

  /** Invites in the caller's scope (the same reach as their user list), newest first. */
  const invitesQuery = (req: Request) => {
    const scope = userScopeOf(req.user!, req.session?.adminOrgId);
    let q = knex('invites')
      .join('organisations', 'organisations.id', 'invites.organisation_id')
      .leftJoin('departments', 'departments.id', 'invites.department_id')
      .select('invites.*', 'organisations.name as organisation_name', 'departments.name as department_name');
    if (scope.nobody) q = q.whereRaw('false');
    if (scope.organisationId !== undefined) q = q.where('invites.organisation_id', scope.organisationId);
    if (scope.departmentId !== undefined) q = q.where('invites.department_id', scope.departmentId);
    return q;
  };

  const listInvites = async (req: Request) =>
    ((await invitesQuery(req).orderBy('invites.id', 'desc').limit(200)) as InviteRow[]).map((r) => present(r, deps.clock()));

  /** The page; after a refused invitation, with its status, each problem and what was typed. */
  const showPage = async (req: Request, res: Response, status = 200, form: FormPage = emptyFormPage) => {
    const invites = await listInvites(req);
    const actor = req.user!;
    const platform = roleRank(actor.role) >= roleRank('platform_admin');
    const organisations = platform
      ? ((await knex('organisations').orderBy('name').select('id', 'name')) as { id: number; name: string }[])
      : [];
    const departments = (await knex('departments')
      .modify((q) => {
        if (!platform) q.where({ organisation_id: actor.organisationId ?? -1 });
        if (actor.role === 'department_admin') q.where({ id: actor.departmentId ?? -1 });
      })
      .orderBy('name')
      .select('id', 'name', 'organisation_id')) as { id: number; name: string; organisation_id: number }[];
    res.status(status).render('dashboard/admin/users/invite', {
      title: 'Invite users',
      section: 'admin-users',
      invites,
      roles: roles.filter((r) => roleRank(r) <= roleRank(actor.role)),
      organisations,
      departments,
      sent: typeof req.query.sent === 'string' ? req.query.sent.slice(0, 320) : undefined,
      revoked: req.query.revoked === '1',
      ...form,
    });
  };

  adminRoute(router, 'GET', '/dashboard/admin/users/invite', async (req, res) => {
    if (wantsJson(req)) return res.json({ data: await listInvites(req) });
    await showPage(req, res);
  });

  adminRoute(router, 'POST', '/dashboard/admin/users/invite', (req, res) =>
    withFormPage(
      req,
      res,
      () => invite(req, res),
      (status, form) => showPage(req, res, status, form),
    ),
  );

  const invite = async (req: Request, res: Response) => {
    const body = parseBody(inviteBody, req.body);
    const actor = req.user!;
    if (roleRank(body.role) > roleRank(actor.role))
      throw new ApiError('forbidden', {
        param: 'role',
        humanMessage: `You cannot invite someone with a role above your own (${actor.role})`,
      });
    const organisationId = targetOrganisation(req, body.org_id);
    const organisation = (await knex('organisations').where({ id: organisationId }).first('name')) as { name: string } | undefined;
    if (!organisation) throw new ApiError('not_found', { param: 'org_id', humanMessage: 'There is no such organisation' });
    // A department admin's invites go into their own department.
    const departmentId = actor.role === 'department_admin' ? actor.departmentId : (body.department_id ?? null);
    if (departmentId !== null) {
      const department = (await knex('departments').where({ id: departmentId }).first('organisation_id')) as
        { organisation_id: number } | undefined;
      if (department?.organisation_id !== organisationId)
        throw new ApiError('validation_error', {
          status: 422,
          param: 'department_id',
          humanMessage: 'The department must belong to the organisation',
        });
    }
    // The rule acceptance checks again (core/identity/administration.ts mayGrantInvite): the checks
    // above say what is wrong; this one keeps sending and accepting to one rule.
    if (!mayGrantInvite(actor, { organisationId, departmentId, role: body.role }))
      throw new ApiError('forbidden', { humanMessage: 'You cannot invite someone there with this role' });
    const member = (await knex('users').whereRaw('lower(email) = lower(?)', [body.email]).first('organisation_id')) as
      { organisation_id: number | null } | undefined;
    if (member?.organisation_id === organisationId)
      throw new ApiError('conflict', { param: 'email', humanMessage: `${body.email} is already a member of this organisation` });
    const now = new Date(deps.clock());
    const { id, secret } = await deps.invites.create(
      { email: body.email, organisationId, departmentId, role: body.role, invitedBy: actor.id },
      now,
    );
    // After the answer: the invitation is made whatever the mail server does (its link is also
    // on the invites list, to send again by hand).
    deps.mailer.sendLater(
      actionMessage(
        body.email,
        `You are invited to join ${organisation.name}`,
        `${actor.displayName} invited you to join ${organisation.name} on the svc platform as ${body.role.replace('_', ' ')}.`,
        'See the invitation',
        `${deps.settings.SVC_PORTAL_BASE_URL}/invite/${secret}`,
        `The link expires in ${tokenLifetimeMs.invite / 86_400_000} days. Sign in (or sign up) with this address to accept it.`,
      ),
      'invitation email',
    );
    const [row] = (await invitesQuery(req).where('invites.id', id)) as InviteRow[];
    if (wantsJson(req)) res.status(201).json({ invite: present(row!, now.getTime()) });
    else res.redirect(303, `/dashboard/admin/users/invite?sent=${encodeURIComponent(body.email)}`);
  };

  adminRoute(router, 'POST', '/dashboard/admin/users/invite/:invite_id/revoke', async (req, res) => {
    const inviteId = Number(req.params.invite_id);
    const [row] = (await invitesQuery(req).where('invites.id', inviteId)) as InviteRow[];
    if (!row) throw new ApiError('not_found', { param: 'invite_id', humanMessage: 'There is no such invite among those you administer' });
    const shown = present(row, deps.clock());
    if (shown.status !== 'pending' || !(await deps.invites.revoke(inviteId)))
      throw new ApiError('conflict', { humanMessage: `Only a pending invite can be revoked; this one is ${shown.status}` });
    if (wantsJson(req)) return res.json({ invite: present({ ...row, status: 'revoked' }, deps.clock()) });
    res.redirect(303, '/dashboard/admin/users/invite?revoked=1');
  });

  return router;
}
