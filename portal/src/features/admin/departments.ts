// Departments (teams) of an organisation (docs/administration.md "Departments"), for org admins
// (their organisation) and platform admins (any; the admin view's organisation, or `org_id`):
//   GET    /dashboard/admin/departments                      list with members (HTML/JSON; ?org_id= for platform admins)
//   POST   /dashboard/admin/departments                      create {name, org_id?}
//   POST   /dashboard/admin/departments/{department_id}         rename {name}
//   POST   /dashboard/admin/departments/{department_id}/delete  delete (a form's way)
//   DELETE /dashboard/admin/departments/{department_id}         delete; 409 while members, pending invites or live tokens name it
// The rules are core/organisations/departments.ts; a department outside the caller's reach is 404.
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { userScopeOf } from '../../../../core/identity/index.js';
import {
  createDepartment,
  deleteDepartment,
  findDepartment,
  listDepartments,
  noSuchDepartment,
  renameDepartment,
  viewDepartment,
} from '../../../../core/organisations/index.js';
import { ApiError } from '../../../../core/errors/index.js';
import type { PortalDeps } from '../../deps.js';
import { wantsJson } from '../../web/errors.js';
import { emptyFormPage, withFormPage, type FormPage } from '../../web/form-issues.js';
import { applyPathParamRules } from '../../web/path-params.js';
import { idField, targetOrganisation } from '../../web/target-organisation.js';
import { parseBody, validate } from '../../web/validation.js';
import { adminRoute } from './route-table.js';

const name = z
  .string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be text') })
  .trim()
  .min(1, 'must not be empty')
  .max(200, 'must be at most 200 characters');
const createBody = z.strictObject({ name, org_id: z.union([idField, z.literal('').transform(() => undefined)]).optional() });
const renameBody = z.strictObject({ name });
const listQuery = z.strictObject({ org_id: idField.optional(), notice: z.string().max(20).optional() });

const notices: Record<string, string> = {
  created: 'Department created.',
  renamed: 'Department renamed.',
  deleted: 'Department deleted.',
};

export function adminDepartmentsRouter(deps: PortalDeps): Router {
  const router = Router();
  applyPathParamRules(router);
  const knex = deps.database;
  const now = () => new Date(deps.clock());

  /** The organisation whose departments the caller sees: their own, or for platform admins the one chosen (all when none). */
  const reach = (req: Request, requested?: number): number | undefined => {
    const scope = userScopeOf(req.user!, requested ?? req.session?.adminOrgId);
    // An org admin outside any organisation reaches none (not, as `undefined` would say, every one).
    if (scope.nobody)
      throw new ApiError('forbidden', { humanMessage: 'You are not in an organisation, so there are no departments of yours' });
    return scope.organisationId;
  };

  /** The department of `:department_id` when it is within the caller's reach; otherwise 404. */
  const target = async (req: Request) => {
    const department = await findDepartment(knex, Number(req.params.department_id));
    const organisation = reach(req);
    if (!department || (organisation !== undefined && department.organisation_id !== organisation)) throw noSuchDepartment();
    return department;
  };

  const answer = async (req: Request, res: Response, notice: string, status = 200, id?: number) => {
    if (wantsJson(req)) return res.status(status).json({ ok: true, department: id === undefined ? null : await viewDepartment(knex, id) });
    res.redirect(303, `/dashboard/admin/departments?notice=${notice}`);
  };

  /** The page; after a refused new department, with its status, each problem and what was typed. */
  const showPage = async (
    req: Request,
    res: Response,
    organisationId: number | undefined,
    { status = 200, notice, form = emptyFormPage }: { status?: number; notice?: string; form?: FormPage } = {},
  ) => {
    // Platform admins pick the organisation of a new department; others create in their own.
    const organisations =
      organisationId === undefined
        ? ((await knex('organisations').orderBy('name').limit(1_000).select('id', 'name')) as { id: number; name: string }[])
        : [];
    res.status(status).render('dashboard/admin/departments/index', {
      title: 'Departments',
      section: 'admin-departments',
      departments: await listDepartments(knex, organisationId),
      organisations,
      organisationId: organisationId ?? null,
      notice,
      ...form,
    });
  };

  adminRoute(router, 'GET', '/dashboard/admin/departments', validate({ query: listQuery }), async (req, res) => {
    const query = req.valid!.query as z.infer<typeof listQuery>;
    const organisationId = reach(req, query.org_id);
    if (wantsJson(req)) return res.json({ data: await listDepartments(knex, organisationId), organisation_id: organisationId ?? null });
    await showPage(req, res, organisationId, { notice: query.notice ? notices[query.notice] : undefined });
  });

  adminRoute(router, 'POST', '/dashboard/admin/departments', (req, res) =>
    withFormPage(
      req,
      res,
      async () => {
        const body = parseBody(createBody, req.body);
        const organisationId = targetOrganisation(req, body.org_id ?? req.session?.adminOrgId);
        const id = await createDepartment(knex, organisationId, body.name, now());
        await answer(req, res, 'created', 201, id);
      },
      (status, form) => showPage(req, res, reach(req), { status, form }),
    ),
  );

  adminRoute(router, 'POST', '/dashboard/admin/departments/:department_id', async (req, res) => {
    const department = await target(req);
    const { name: newName } = parseBody(renameBody, req.body);
    await renameDepartment(knex, department.id, newName);
    await answer(req, res, 'renamed', 200, department.id);
  });

  const remove = async (req: Request, res: Response) => {
    const department = await target(req);
    await deleteDepartment(knex, department.id, now());
    await answer(req, res, 'deleted');
  };
  adminRoute(router, 'POST', '/dashboard/admin/departments/:department_id/delete', remove);
  adminRoute(router, 'DELETE', '/dashboard/admin/departments/:department_id', remove);

  return router;
}
