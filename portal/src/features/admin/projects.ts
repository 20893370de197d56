// The administrators' projects view (docs/projects.md "Administration"), read-only:
//   GET /dashboard/admin/projects?org_id=   platform admins: every organisation (org_id=all), narrowed by
//                                           the dropdown (org_id, else the organisation chosen with
//                                           /dashboard/set-admin-org); org admins: their
//                                           organisation; department admins: the projects they
//                                           created or belong to. Below admin: 403 (route table).
import { Router } from 'express';
import { z } from 'zod';
import { ApiError } from '../../../../core/errors/index.js';
import { roleAtLeast } from '../../../../core/identity/index.js';
import { listProjects, projectAdminScope } from '../../../../core/projects/index.js';
import type { PortalDeps } from '../../deps.js';
import { wantsJson } from '../../web/errors.js';
import { validate } from '../../web/validation.js';
import { idField } from '../../web/target-organisation.js';
import { adminRoute } from './route-table.js';

// `all`: every organisation (the dropdown's first choice); a blank parameter is one not given.
const query = z.strictObject({ org_id: z.union([idField, z.literal('all')]).optional() });

export function adminProjectsRouter(deps: PortalDeps): Router {
  const router = Router();
  const knex = deps.database;

  adminRoute(router, 'GET', '/dashboard/admin/projects', validate({ query }), async (req, res) => {
    const q = req.valid!.query as z.infer<typeof query>;
    const actor = req.user!;
    const platform = roleAtLeast(actor.role, 'platform_admin');
    // The dropdown's choice wins over the session's; `all` shows every organisation.
    const chosen = !platform ? undefined : q.org_id === 'all' ? undefined : (q.org_id ?? req.session?.adminOrgId);
    // An organisation that does not exist is 404, as choosing it with set-admin-org is: an empty
    // list would read as an organisation without projects. (Only platform admins get this far with one.)
    if (platform && typeof q.org_id === 'number' && !(await knex('organisations').where({ id: q.org_id }).first('id')))
      throw new ApiError('not_found', { param: 'org_id', humanMessage: `There is no organisation ${q.org_id}` });
    const scope = projectAdminScope(actor, chosen);
    const projects = await listProjects(knex, scope, new Date(deps.clock()));
    const scopeText =
      scope.kind === 'all'
        ? scope.organisationId === undefined
          ? 'every organisation'
          : 'one organisation'
        : scope.kind === 'organisation'
          ? 'your organisation'
          : 'the projects you created or belong to';
    if (wantsJson(req)) return res.json({ object: 'list', scope: { ...scope, description: scopeText }, data: projects });
    res.render('dashboard/admin/projects/index', {
      title: 'Projects',
      section: 'admin-projects',
      projects,
      scopeText,
      organisations: platform ? ((await knex('organisations').orderBy('name').select('id', 'name')) as { id: number; name: string }[]) : [],
      chosen: chosen ?? null,
    });
  });

  return router;
}
