// Organisations, for platform administrators (docs/administration.md "Organisations"):
//   GET    /dashboard/admin/organisations              list with members, keys, spend this month, balance
//   POST   /dashboard/admin/organisations              create {name, slug?}
//   POST   /dashboard/admin/organisations/merge        {target_org_id, source_org_ids, billing_user_id, role_{user_id}}
//   GET    /dashboard/admin/organisations/{org_id}/merge-data   members and billing_user_id (JSON)
//   POST   /dashboard/admin/organisations/{org_id}     update {name, slug, billing_exempt, monthly_budget}
//   DELETE /dashboard/admin/organisations/{org_id}     refused (409) while it has users
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { republishSpendGroupCap } from '../../../../core/budget/index.js';
import { ApiError } from '../../../../core/errors/index.js';
import { roles, type Role } from '../../../../core/identity/index.js';
import { KeyAnnouncer } from '../../../../core/keys/index.js';
import {
  createOrganisation,
  deleteOrganisation,
  forgetOrganisationCounters,
  listOrganisations,
  mergeData,
  mergeOrganisations,
  updateOrganisation,
} from '../../../../core/organisations/index.js';
import type { PortalDeps } from '../../deps.js';
import { noteAdministered } from '../../web/activity.js';
import { wantsJson } from '../../web/errors.js';
import { emptyFormPage, withFormPage, type FormPage } from '../../web/form-issues.js';
import { applyPathParamRules } from '../../web/path-params.js';
import { idField } from '../../web/target-organisation.js';
import { parseBody, usdAmountOrNone, validationError } from '../../web/validation.js';
import { adminRoute } from './route-table.js';

const name = z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters');
const slug = z
  .string()
  .trim()
  .regex(/^[a-z0-9][a-z0-9-]{0,99}$/, 'must be lower-case letters, digits and dashes (at most 100), starting with a letter or digit');
const flag = z.union([z.boolean(), z.enum(['true', 'false', 'on', 'off']).transform((v) => v === 'true' || v === 'on')], {
  message: 'must be true or false',
});
const createBody = z.strictObject({ name, slug: slug.optional().or(z.literal('').transform(() => undefined)) });
const updateBody = z.strictObject({
  name: name.optional(),
  slug: slug.optional(),
  billing_exempt: flag.optional(),
  monthly_budget: usdAmountOrNone.optional(),
});
const mergeBody = z
  .object({
    target_org_id: idField,
    source_org_ids: z.union([
      z.array(idField).min(1).max(50),
      z
        .string()
        .max(1000)
        .transform((text, ctx) => {
          const ids = text
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean);
          if (ids.length === 0 || ids.some((id) => !/^[1-9][0-9]{0,9}$/.test(id))) {
            ctx.addIssue({ code: 'custom', message: 'must be organisation ids separated by commas' });
            return z.NEVER;
          }
          return ids.map(Number);
        }),
    ]),
    billing_user_id: z
      .union([idField, z.literal(''), z.null()])
      .transform((v) => (v === '' ? undefined : v))
      .optional(),
  })
  .catchall(z.unknown());

/** The `role_{user_id}` fields of a merge: each a known role. */
function mergeRoles(body: Record<string, unknown>): Map<number, Role> {
  const result = new Map<number, Role>();
  for (const [field, value] of Object.entries(body)) {
    const match = /^role_([1-9][0-9]{0,9})$/.exec(field);
    if (!match) continue;
    if (value === '' || value === undefined) continue; // "keep the role"
    if (typeof value !== 'string' || !(roles as readonly string[]).includes(value))
      throw validationError([{ loc: ['body', field], msg: `must be one of ${roles.join(', ')}`, type: 'invalid_value' }]);
    result.set(Number(match[1]), value as Role);
  }
  return result;
}

export function adminOrganisationsRouter(deps: PortalDeps): Router {
  const router = Router();
  applyPathParamRules(router);
  const knex = deps.database;
  const announcer = new KeyAnnouncer(deps.store, { logger: (facts, message) => deps.logger.warn(facts, message) });
  const now = () => new Date(deps.clock());

  const answer = async (req: Request, res: Response, orgId: number | null, notice: string, status = 200) => {
    if (wantsJson(req)) {
      const organisation = orgId === null ? null : ((await listOrganisations(knex, now(), orgId))[0] ?? null);
      return res.status(status).json({ ok: true, organisation });
    }
    res.redirect(303, `/dashboard/admin/organisations?notice=${notice}`);
  };

  const notices: Record<string, string> = {
    created: 'Organisation created.',
    updated: 'Organisation saved.',
    deleted: 'Organisation deleted.',
    merged: 'Organisations merged: members, departments, keys and invites moved into the target.',
  };
  /** The page; after a refused new organisation, with its status, each problem and what was typed. */
  const showPage = async (req: Request, res: Response, status = 200, form: FormPage = emptyFormPage) => {
    res.status(status).render('dashboard/admin/organisations/index', {
      title: 'Organisations',
      section: 'admin-organisations',
      organisations: await listOrganisations(knex, now()),
      notice: typeof req.query.notice === 'string' ? notices[req.query.notice] : undefined,
      ...form,
    });
  };

  adminRoute(router, 'GET', '/dashboard/admin/organisations', async (req, res) => {
    if (wantsJson(req)) return res.json({ data: await listOrganisations(knex, now()) });
    await showPage(req, res);
  });

  adminRoute(router, 'POST', '/dashboard/admin/organisations', (req, res) =>
    withFormPage(
      req,
      res,
      async () => {
        const body = parseBody(createBody, req.body);
        const id = await createOrganisation(knex, body, now());
        await answer(req, res, id, 'created', 201);
      },
      (status, form) => showPage(req, res, status, form),
    ),
  );

  adminRoute(router, 'POST', '/dashboard/admin/organisations/merge', async (req, res) => {
    const body = parseBody(mergeBody, req.body);
    const { hashes, movedMembers, roleChanges } = await mergeOrganisations(knex, req.user!, {
      targetId: body.target_org_id,
      sourceIds: body.source_org_ids,
      ...(body.billing_user_id !== undefined && { billingUserId: body.billing_user_id }),
      roles: mergeRoles(req.body as Record<string, unknown>),
    });
    await announcer.announceAll(hashes);
    await forgetOrganisationCounters(deps.store, [body.target_org_id, ...body.source_org_ids], now()).catch((error: unknown) =>
      deps.logger.warn({ err: error }, 'merged; the organisation spend counters are rebuilt when the store is back'),
    );
    deps.logger.info(
      { target: body.target_org_id, sources: body.source_org_ids, by: req.user!.id, keys: hashes.length },
      'organisations merged',
    );
    // Each member the merge moved or gave another role is told in their activity, as for any
    // administrator's change (docs/administration.md).
    const changes = [
      ...movedMembers.map((m) => ({ ...m, what: 'Organisation changed (organisations merged)' })),
      ...roleChanges.map((r) => ({ ...r, what: `Role changed from ${r.from} to ${r.to} (organisations merged)` })),
    ];
    for (const { userId, from, to, what } of changes)
      await noteAdministered(deps, req.user!.id, userId, what, { from, to }, 'a platform administrator');
    await answer(req, res, body.target_org_id, 'merged');
  });

  adminRoute(router, 'GET', '/dashboard/admin/organisations/:org_id/merge-data', async (req, res) => {
    res.json(await mergeData(knex, Number(req.params.org_id)));
  });

  adminRoute(router, 'POST', '/dashboard/admin/organisations/:org_id', async (req, res) => {
    const id = Number(req.params.org_id);
    const patch = parseBody(updateBody, req.body);
    if (Object.values(patch).every((v) => v === undefined))
      throw new ApiError('validation_error', {
        status: 422,
        humanMessage: 'Send at least one of name, slug, billing_exempt, monthly_budget',
      });
    await announcer.announceAll(await updateOrganisation(knex, id, patch));
    if (patch.monthly_budget !== undefined)
      await republishSpendGroupCap(knex, deps.store, { scope: 'organisation', id }, (error: unknown) =>
        deps.logger.warn({ err: error, organisationId: id }, 'organisation budget saved; gateways pick it up within a minute'),
      );
    await answer(req, res, id, 'updated');
  });

  adminRoute(router, 'DELETE', '/dashboard/admin/organisations/:org_id', async (req, res) => {
    await deleteOrganisation(knex, Number(req.params.org_id));
    if (wantsJson(req)) return res.json({ ok: true });
    res.redirect(303, '/dashboard/admin/organisations?notice=deleted');
  });

  return router;
}
