// Projects (docs/projects.md): a group of people in an organisation whose API tokens are paid by
// the project's wallet (`project:<id>`).
//   GET  /dashboard/projects                                       the caller's projects (created or member) and the create form
//   POST /dashboard/projects                                       {name, description?, department_id?} department admins and above
//   GET  /dashboard/projects/{project_id}                          members, tokens, balance, this month's spend
//   POST /dashboard/projects/{project_id}/members                  {email} an active member of the organisation
//   POST /dashboard/projects/{project_id}/members/{user_id}/remove
//   POST /dashboard/projects/{project_id}/tokens                   {name} → the svc_ secret, once
//   POST /dashboard/projects/{project_id}/tokens/{token_id}/revoke
// A project is managed by its members and by the administrators whose reach covers its
// department (core/identity `projects.create`); anyone else gets 404, as for a project that
// does not exist.
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { ApiError } from '../../../../core/errors/index.js';
import { isAllowed } from '../../../../core/identity/index.js';
import { KeyAnnouncer, KeyRepository, type KeyRecord } from '../../../../core/keys/index.js';
import {
  addProjectMember,
  createProject,
  findProject,
  isProjectMember,
  listProjects,
  projectMembers,
  projectPayerId,
  removeProjectMember,
  type ProjectView,
} from '../../../../core/projects/index.js';
import type { PortalDeps } from '../../deps.js';
import { helpPanels, isHelpHidden } from '../help/panels.js';
import { noteActivity } from '../../web/activity.js';
import { wantsJson } from '../../web/errors.js';
import { applyPathParamRules } from '../../web/path-params.js';
import { requireAction } from '../../web/principal.js';
import { noQuery, parseBody } from '../../web/validation.js';
import { idField } from '../../web/target-organisation.js';
import { FormClaims, newFormToken, sentFormToken, withoutFormToken } from '../../web/form-claims.js';
import { emailAddress } from '../../../../core/identity/email.js';

const name = z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters');
const createBody = z.strictObject({
  name,
  description: z
    .string()
    .trim()
    .max(1000, 'must be at most 1000 characters')
    .optional()
    .transform((v) => (v ? v : null)),
  department_id: z
    .union([idField, z.literal(''), z.null()])
    .optional()
    .transform((v) => (v === '' || v === undefined ? null : v)),
});
const memberBody = z.strictObject({ email: emailAddress.transform((e) => e.toLowerCase()) });
const tokenBody = z.strictObject({ name });

/** Largest id an `integer` column holds: a bigger path id names nothing (and must not reach PostgreSQL). */
const maxId = 2_147_483_647;

/** A project token as the page shows it (the secret only once, at creation). */
const tokenView = (t: KeyRecord) => ({
  token_id: t.number,
  name: t.name,
  status: t.status,
  token_hint: t.secretHint,
  created: t.createdAt,
  created_by: t.ownerUserId,
});

export function projectsRouter(deps: PortalDeps): Router {
  const router = Router();
  applyPathParamRules(router);
  const knex = deps.database;
  const keys = new KeyRepository(knex, deps.settings.SVC_KEY_PEPPER);
  const formClaims = new FormClaims(deps.store, deps.logger, 'project-token-form');
  const announcer = new KeyAnnouncer(deps.store, { logger: (facts, message) => deps.logger.warn(facts, message) });
  const now = () => new Date(deps.clock());
  const view = requireAction('projects.view');

  /** Whether the caller administers the project's department (or organisation, or everything). */
  const administers = (req: Request, project: ProjectView) =>
    isAllowed(req.user!, 'projects.create', { organisationId: project.organisation_id, departmentId: project.department_id });

  /** The project of `:project_id` when the caller manages it (member or administrator); otherwise 404. */
  const managedProject = async (req: Request): Promise<ProjectView> => {
    const id = Number(req.params.project_id);
    const project = id <= maxId ? await findProject(knex, id, now()) : undefined;
    if (!project || !((await isProjectMember(knex, project.id, req.user!.id)) || administers(req, project)))
      throw new ApiError('not_found', { param: 'project_id', humanMessage: 'There is no project with this id among yours' });
    return project;
  };

  /** The departments the caller may create projects in. */
  const departmentsFor = async (req: Request) => {
    const user = req.user!;
    if (user.organisationId === null) return [];
    const rows = (await knex('departments').where({ organisation_id: user.organisationId }).orderBy('name').select('id', 'name')) as {
      id: number;
      name: string;
    }[];
    return rows.filter((d) => isAllowed(user, 'projects.create', { organisationId: user.organisationId, departmentId: d.id }));
  };

  /** May the caller create a project without a department (organisation-wide)? */
  const mayCreateOrganisationWide = (req: Request) =>
    req.user!.organisationId !== null &&
    isAllowed(req.user!, 'projects.create', { organisationId: req.user!.organisationId, departmentId: null });

  const projectTokens = async (projectId: number) =>
    (await keys.list({ kind: 'token', limit: 200, payerId: projectPayerId(projectId) })).data.map(tokenView);

  const renderDetail = async (req: Request, res: Response, shown: ProjectView, created: object | null, status = 200) => {
    // Figures read again: a token just issued counts among the live ones.
    const [project, members, tokens] = await Promise.all([
      findProject(knex, shown.id, now()).then((p) => p ?? shown),
      projectMembers(knex, shown.id),
      projectTokens(shown.id),
    ]);
    if (wantsJson(req)) return res.status(status).json({ project, members, tokens, ...(created && { created }) });
    res.status(status).render('dashboard/projects/detail', {
      title: project.name,
      section: 'projects',
      project,
      members,
      tokens,
      created,
      canManageMembers: true,
      gatewayUrl: deps.gatewayUrlHint,
      notice: typeof req.query.notice === 'string' ? notices[req.query.notice] : undefined,
      formToken: newFormToken(),
    });
  };

  router.get('/dashboard/projects', view, noQuery, async (req, res) => {
    const projects = await listProjects(knex, { kind: 'involved', userId: req.user!.id }, now());
    if (wantsJson(req)) return res.json({ object: 'list', data: projects });
    res.render('dashboard/projects/index', {
      title: 'Projects',
      section: 'projects',
      help: helpPanels.projects,
      helpHidden: await isHelpHidden(knex, req.user!.id, 'projects'),
      projects,
      departments: await departmentsFor(req),
      organisationWide: mayCreateOrganisationWide(req),
    });
  });

  router.post('/dashboard/projects', view, async (req, res) => {
    const body = parseBody(createBody, req.body);
    const user = req.user!;
    if (user.organisationId === null)
      throw new ApiError('forbidden', { humanMessage: 'Projects belong to an organisation, and you are not in one' });
    const allowed =
      body.department_id === null ? mayCreateOrganisationWide(req) : (await departmentsFor(req)).some((d) => d.id === body.department_id);
    if (!allowed) {
      if ((await departmentsFor(req)).length === 0 && !mayCreateOrganisationWide(req))
        throw new ApiError('forbidden', { humanMessage: 'Only department and organisation administrators create projects' });
      throw new ApiError('validation_error', {
        status: 422,
        param: 'department_id',
        humanMessage:
          body.department_id === null
            ? 'Choose the department the project belongs to (only organisation administrators create organisation-wide projects)'
            : 'Choose a department of your organisation that you administer',
      });
    }
    const id = await createProject(knex, {
      organisationId: user.organisationId,
      departmentId: body.department_id,
      name: body.name,
      description: body.description,
      createdBy: user.id,
    });
    await noteActivity(deps, {
      userId: user.id,
      kind: 'project_created',
      summary: `Created project “${body.name}”`,
      details: { project_id: id },
    });
    const project = (await findProject(knex, id, now()))!;
    if (wantsJson(req)) return res.status(201).json({ project });
    res.redirect(303, `/dashboard/projects/${id}`);
  });

  router.get('/dashboard/projects/:project_id', view, async (req, res) => {
    await renderDetail(req, res, await managedProject(req), null);
  });

  router.post('/dashboard/projects/:project_id/members', view, async (req, res) => {
    const project = await managedProject(req);
    const { email } = parseBody(memberBody, req.body);
    const userId = await addProjectMember(knex, project, email, req.user!.id);
    await noteActivity(deps, {
      userId: req.user!.id,
      kind: 'project_member_added',
      summary: `Added ${email} to project “${project.name}”`,
      details: { project_id: project.id, user_id: userId },
    });
    if (wantsJson(req)) return res.json({ ok: true, members: await projectMembers(knex, project.id) });
    res.redirect(303, `/dashboard/projects/${project.id}?notice=member`);
  });

  router.post('/dashboard/projects/:project_id/members/:user_id/remove', view, async (req, res) => {
    const project = await managedProject(req);
    const userId = Number(req.params.user_id);
    if (userId > maxId) throw new ApiError('not_found', { param: 'user_id', humanMessage: 'This user is not a member of the project' });
    // The tokens they issued for the project are revoked: every gateway refuses them within a second.
    await announcer.announceAll(await removeProjectMember(knex, project.id, userId, now()));
    await noteActivity(deps, {
      userId: req.user!.id,
      kind: 'project_member_removed',
      summary: `Removed a member from project “${project.name}”`,
      details: { project_id: project.id, user_id: userId },
    });
    if (wantsJson(req)) return res.json({ ok: true, members: await projectMembers(knex, project.id) });
    res.redirect(303, `/dashboard/projects/${project.id}?notice=removed`);
  });

  router.post('/dashboard/projects/:project_id/tokens', view, async (req, res) => {
    const project = await managedProject(req);
    const formToken = sentFormToken(req);
    const body = parseBody(tokenBody, withoutFormToken(req.body));
    const userId = req.user!.id;
    const made = await formClaims.makeOnce(userId, formToken, () =>
      keys.create({
        kind: 'token',
        name: body.name,
        source: 'portal',
        metadata: { project: String(project.id), project_name: project.name },
        ownerUserId: userId,
        organisationId: project.organisation_id,
        // The project pays (the gateway API's first effective payer), never the member who made it.
        payerId: projectPayerId(project.id),
      }),
    );
    // Sent before (the answering page reloaded, a second click): the project with the token it made, not a second one.
    if ('already' in made) return res.redirect(303, `/dashboard/projects/${project.id}?notice=token_already_created`);
    const { record, secret } = made.made;
    await announcer.announce(record.secretHash).catch(() => undefined);
    await noteActivity(deps, {
      userId: req.user!.id,
      kind: 'key_created',
      summary: `Created API token “${record.name}” for project ${project.name}`,
      details: { token_id: record.number, project_id: project.id },
    });
    res.set('cache-control', 'no-store');
    await renderDetail(req, res, project, { ...tokenView(record), token: secret }, 201);
  });

  router.post('/dashboard/projects/:project_id/tokens/:token_id/revoke', view, async (req, res) => {
    const project = await managedProject(req);
    const number = Number(req.params.token_id);
    const token = number <= maxId ? await keys.findByNumber(number) : undefined;
    if (!token || token.kind !== 'token' || token.payerId !== projectPayerId(project.id))
      throw new ApiError('not_found', { param: 'token_id', humanMessage: 'This project has no API token with this id' });
    if (token.status !== 'revoked') {
      await keys.update(token.id, { status: 'revoked' });
      // Every gateway refuses it within a second.
      await announcer.announce(token.secretHash).catch(() => undefined);
      await noteActivity(deps, {
        userId: req.user!.id,
        kind: 'key_revoked',
        summary: `Revoked API token “${token.name}” of project ${project.name}`,
        details: { token_id: token.number, project_id: project.id },
      });
    }
    if (wantsJson(req)) return res.json({ ok: true, token: tokenView((await keys.findByNumber(number)) ?? token) });
    res.redirect(303, `/dashboard/projects/${project.id}?notice=revoked`);
  });

  return router;
}

/** Notices after a change (`?notice=`), from a fixed list so the URL cannot inject text. */
const notices: Record<string, string> = {
  member: 'Member added: they can now issue and revoke this project’s tokens.',
  removed: 'Member removed.',
  revoked: 'Token revoked; every gateway refuses it within a second.',
  token_already_created:
    'This form was sent already: the token it made is in the list below. Its secret was shown once, on the page that answered the form; if you did not copy it, revoke the token and create another.',
};
