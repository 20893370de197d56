// User administration (docs/administration.md "Users"):
//   GET  /dashboard/admin/users                 list in the caller's scope: q, role, status, before, limit
//   GET  /dashboard/admin/users/{user_id}       detail (HTML, or JSON)
//   POST /dashboard/admin/users/{user_id}/role        {role}
//   POST /dashboard/admin/users/{user_id}/status      {status: active | suspended | archived}
//   POST /dashboard/admin/users/{user_id}/department  {department_id | ""}
//   POST /dashboard/admin/users/{user_id}/org         {org_id | ""} (platform admins)
//   POST /dashboard/admin/users/{user_id}/hard-delete
//   POST /dashboard/admin/users/{user_id}/billing-exempt  {billing_exempt?} (absent: toggle)
//   POST /dashboard/admin/users/{user_id}/credit-limit    {credit_limit_usd} (org admins and above, within reach)
//   POST /dashboard/admin/users/{user_id}/monthly-budget  {monthly_budget_usd}
//   POST /dashboard/admin/users/{user_id}/billing-config  {spending_limit_usd} (applied per billing mode)
// The rules (reach, roles, last owner, anonymisation) are core/identity/administration.ts; the
// guard of each route comes from the admin route table.
import { Router, type Request, type Response } from 'express';
import type { Knex } from 'knex';
import { z } from 'zod';
import { ApiError } from '../../../../core/errors/index.js';
import {
  findAdministeredUser,
  hardDeleteUser,
  listUsers,
  mayAdminister,
  moveUserToOrganisation,
  noSuchUser,
  roleAtLeast,
  roles,
  setUserDepartment,
  setUserRole,
  setUserStatus,
  userScopeOf,
  userStatuses,
  type Action,
  type AdministeredUser,
} from '../../../../core/identity/index.js';
import { billingConfigOf, repointPortalKeys, mayGiveCredit, setCreditLimit, setMonthlyBudget } from '../../../../core/billing/index.js';
import { KeyAnnouncer } from '../../../../core/keys/index.js';
import { forgetOrganisationCounters } from '../../../../core/organisations/index.js';
import type { PortalDeps } from '../../deps.js';
import { noteAdministered } from '../../web/activity.js';
import { wantsJson } from '../../web/errors.js';
import { applyPathParamRules } from '../../web/path-params.js';
import { idField } from '../../web/target-organisation.js';
import { parseBody, singleString, usdAmountOrNone, validate, wholeNumberParam } from '../../web/validation.js';
import { adminRoute } from './route-table.js';

const listQuery = z.strictObject({
  q: singleString(200).optional(),
  role: z.enum(roles, { message: `must be one of ${roles.join(', ')}` }).optional(),
  status: z.enum(userStatuses, { message: `must be one of ${userStatuses.join(', ')}` }).optional(),
  include_deleted: z.enum(['true', 'false'], { message: 'must be true or false' }).optional(),
  before: wholeNumberParam(2_147_483_647).optional(),
  limit: wholeNumberParam(100).optional(),
  notice: singleString(40).optional(),
});

const roleBody = z.object({
  role: z.enum(roles, { message: `must be one of ${roles.join(', ')}` }),
  /** Stepping down from one's own role, said on purpose (nobody can give it back but another administrator). */
  confirm_step_down: z.literal('yes', { message: 'must be "yes"' }).optional(),
});
const statusBody = z.object({ status: z.enum(userStatuses, { message: `must be one of ${userStatuses.join(', ')}` }) });
const noneOr = (field: z.ZodType<number>) => z.union([field, z.literal(''), z.null()]).transform((v) => (v === '' ? null : v));
const departmentBody = z.object({ department_id: noneOr(idField) });
const organisationBody = z.object({ org_id: noneOr(idField) });
const exemptBody = z.object({
  billing_exempt: z
    .union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')], { message: 'must be true or false' })
    .optional(),
});
const creditBody = z.object({ credit_limit_usd: usdAmountOrNone });
const monthlyBudgetBody = z.object({ monthly_budget_usd: usdAmountOrNone });
const billingConfigBody = z.object({ spending_limit_usd: usdAmountOrNone });
// Deleting cannot be undone: the caller confirms it explicitly (a ticked box on the form).
const deleteBody = z.object({
  confirm: z.literal('delete', { message: 'must be "delete" to confirm that the account is deleted for good' }),
});

/** Notices after a change (`?notice=`), from a fixed list so the URL cannot inject text. */
const notices: Record<string, string> = {
  role: 'Role changed; it applies from the user’s next click.',
  status: 'Status changed. A suspended or archived user is signed out everywhere and their keys stop at every gateway within a second.',
  department: 'Department changed.',
  org: 'Organisation changed; the user’s keys moved with them.',
  exempt: 'Billing exemption saved; the user’s keys follow at every gateway within a second.',
  credit: 'Credit limit saved; every gateway applies it from the next request.',
  budget: 'Monthly budget saved; every gateway applies it from the next request.',
  config: 'Spending limit saved in the user’s billing mode; every gateway applies it from the next request.',
  deleted: 'The account was deleted: personal data removed, keys revoked, billing and audit history kept anonymised.',
};

/** A limit as the activity log states it. */
const usdNote = (usd: number | null) => (usd === null || usd === 0 ? 'none' : `$${usd}`);

export function adminUsersRouter(deps: PortalDeps): Router {
  const router = Router();
  applyPathParamRules(router);
  const knex = deps.database;
  const announcer = new KeyAnnouncer(deps.store, { logger: (facts, message) => deps.logger.warn(facts, message) });
  const now = () => new Date(deps.clock());

  /** The user of `:user_id` when the caller may perform `action` on them; otherwise 404. */
  const target = async (req: Request, action: Action): Promise<AdministeredUser> => {
    const user = await findAdministeredUser(knex, Number(req.params.user_id));
    if (!user || !mayAdminister(req.user!, action, user)) throw noSuchUser();
    return user;
  };

  /** As `target`, for a change: an anonymised (hard-deleted) account keeps its history and nothing else changes. */
  const liveTarget = async (req: Request, action: Action): Promise<AdministeredUser> => {
    const user = await target(req, action);
    if (user.deleted) throw new ApiError('conflict', { humanMessage: 'This account was deleted; nothing about it can be changed' });
    return user;
  };

  /**
   * The user whose money limits change, never the caller: credit, exemption, spending limit and
   * monthly budget bound what someone may spend unpaid, so nobody sets their own — as nobody
   * changes their own status — and an org admin cannot grant themselves credit.
   */
  const moneyTarget = async (req: Request, action: Action, what: string): Promise<AdministeredUser> => {
    const user = await liveTarget(req, action);
    if (user.id === req.user!.id)
      throw new ApiError('forbidden', { humanMessage: `You cannot change your own ${what}; another administrator can` });
    return user;
  };

  /**
   * What an org admin may advance is bounded (the platform carries it; platform admins are not
   * bounded): at most SVC_ORG_ADMIN_MAX_CREDIT_USD per user. Never to the wallet that pays for the
   * admin's own keys is mayGiveCredit (core/billing/user-limits.ts), asked in the transaction.
   */
  const boundOrgAdminCredit = (user: AdministeredUser, usd: number | null) => {
    const ceiling = deps.settings.SVC_ORG_ADMIN_MAX_CREDIT_USD;
    if (usd !== null && usd > ceiling)
      throw new ApiError('forbidden', {
        param: 'credit_limit_usd',
        humanMessage: `An organisation admin may give at most ${ceiling} USD of credit; a platform administrator can give more`,
      });
  };

  /**
   * Per user is not enough (an org admin could invite many accounts and give each the most): the
   * credit of all of the organisation's users together stays within
   * SVC_ORG_ADMIN_MAX_ORG_CREDIT_USD when an org admin raises it. Lowering is always allowed.
   */
  const boundOrganisationCredit = async (trx: Knex.Transaction, user: AdministeredUser, usd: number | null) => {
    if (usd === null || user.organisation_id === null) return;
    await trx('organisations').where({ id: user.organisation_id }).forUpdate().first('id');
    // The user's limit as it is now, under the lock (read before it, a "lowering" could be a raise).
    const current = (await trx('users').where({ id: user.id }).first('credit_limit_usd')) as
      { credit_limit_usd: string | null } | undefined;
    if (usd <= Number(current?.credit_limit_usd ?? 0)) return;
    const row = (await trx('users')
      .where({ organisation_id: user.organisation_id })
      .whereNot({ id: user.id })
      .sum({ total: 'credit_limit_usd' })
      .first()) as { total: string | number | null } | undefined;
    // In whole micro-dollars (amounts have at most 6 decimals), so the comparison is exact.
    const micros = (amount: number) => Math.round(amount * 1e6);
    const others = micros(Number(row?.total ?? 0));
    const ceiling = micros(deps.settings.SVC_ORG_ADMIN_MAX_ORG_CREDIT_USD);
    if (others + micros(usd) > ceiling)
      throw new ApiError('forbidden', {
        param: 'credit_limit_usd',
        humanMessage: `The organisation's other users have $${others / 1e6} of credit; an organisation admin may bring the total to at most $${ceiling / 1e6}, so at most $${Math.max(0, ceiling - others) / 1e6} for this user; a platform administrator can give more`,
      });
  };

  /** Every key of the user (a status change concerns them all). */
  const keysOf = async (userId: number) => (await knex('api_keys').where({ owner_user_id: userId }).pluck('secret_hash')) as string[];

  const answer = async (req: Request, res: Response, userId: number, notice: string) => {
    if (wantsJson(req)) return res.json({ ok: true, user: await findAdministeredUser(knex, userId) });
    res.redirect(303, notice === 'deleted' ? '/dashboard/admin/users?notice=deleted' : `/dashboard/admin/users/${userId}?notice=${notice}`);
  };

  /** The change in the user's activity (noteAdministered: "by" whom, unless one's own). */
  const note = (
    req: Request,
    user: AdministeredUser,
    what: string,
    details: Record<string, string | number | boolean | null>,
    by?: string,
  ) => noteAdministered(deps, req.user!.id, user.id, what, details, by);

  adminRoute(router, 'GET', '/dashboard/admin/users', validate({ query: listQuery }), async (req, res) => {
    const q = req.valid!.query as z.infer<typeof listQuery>;
    const scope = userScopeOf(req.user!, req.session?.adminOrgId);
    const page = await listUsers(knex, scope, {
      ...(q.q && { q: q.q }),
      ...(q.role && { role: q.role }),
      ...(q.status && { status: q.status }),
      includeDeleted: q.include_deleted === 'true',
      limit: q.limit ?? 50,
      ...(q.before !== undefined && { before: q.before }),
    });
    if (wantsJson(req)) return res.json(page);
    const next = new URLSearchParams(
      Object.entries({ ...q, notice: undefined, before: page.next_before ?? undefined }).flatMap(([k, v]) =>
        v === undefined ? [] : [[k, String(v)] as [string, string]],
      ),
    );
    res.render('dashboard/admin/users/list', {
      title: 'Users',
      section: 'admin-users',
      page,
      query: q,
      roles,
      statuses: userStatuses,
      nextHref: page.next_before === null ? null : `/dashboard/admin/users?${next.toString()}`,
      notice: q.notice ? notices[q.notice] : undefined,
    });
  });

  adminRoute(router, 'GET', '/dashboard/admin/users/:user_id', async (req, res) => {
    const user = await target(req, 'admin.view');
    const [keys] = await knex('api_keys').where({ owner_user_id: user.id }).whereNot({ status: 'revoked' }).count({ n: '*' });
    const departments =
      user.organisation_id === null
        ? []
        : ((await knex('departments').where({ organisation_id: user.organisation_id }).orderBy('name').select('id', 'name')) as {
            id: number;
            name: string;
          }[]);
    const detail = { ...user, active_keys: Number((keys as { n: string | number }).n), billing: await billingConfigOf(knex, user.id) };
    if (wantsJson(req)) return res.json(detail);
    const actor = req.user!;
    const organisations = mayAdminister(actor, 'admin.platform.manage', user)
      ? ((await knex('organisations').orderBy('name').select('id', 'name')) as { id: number; name: string }[])
      : [];
    const notice = typeof req.query.notice === 'string' ? notices[req.query.notice] : undefined;
    res.render('dashboard/admin/users/detail', {
      title: user.display_name,
      section: 'admin-users',
      user: detail,
      roles: roles.filter((r) => roles.indexOf(r) >= roles.indexOf(actor.role)),
      statuses: userStatuses,
      departments,
      organisations,
      can: {
        manage: mayAdminister(actor, 'admin.users.manage', user) && user.id !== actor.id && !user.deleted,
        department: mayAdminister(actor, 'admin.organisation.manage', user) && !user.deleted,
        organisation: organisations.length > 0 && !user.deleted,
        delete: mayAdminister(actor, 'admin.organisation.manage', user) && user.id !== actor.id && !user.deleted,
        exempt: mayAdminister(actor, 'admin.platform.manage', user) && !user.deleted,
        credit: mayAdminister(actor, 'admin.platform.manage', user) && !user.deleted,
        budget: mayAdminister(actor, 'admin.platform.manage', user) && !user.deleted,
      },
      notice,
    });
  });

  adminRoute(router, 'POST', '/dashboard/admin/users/:user_id/role', async (req, res) => {
    const user = await liveTarget(req, 'admin.users.manage');
    const { role, confirm_step_down } = parseBody(roleBody, req.body);
    await setUserRole(knex, req.user!, user, role, now(), { stepDownConfirmed: confirm_step_down === 'yes' });
    // The same role again changes nothing, so there is nothing to tell the user.
    if (role !== user.role) await note(req, user, `Role changed from ${user.role} to ${role}`, { from: user.role, to: role });
    await answer(req, res, user.id, 'role');
  });

  adminRoute(router, 'POST', '/dashboard/admin/users/:user_id/status', async (req, res) => {
    const user = await target(req, 'admin.users.manage');
    const { status } = parseBody(statusBody, req.body);
    const repointed = await setUserStatus(knex, req.user!, user, status, now());
    // The user's own keys (refused or served again) and those whose payer followed their standing.
    await announcer.announceAll([...new Set([...(await keysOf(user.id)), ...repointed])]);
    await note(req, user, `Account ${status === 'active' ? 'reactivated' : status}`, { from: user.status, to: status });
    await answer(req, res, user.id, 'status');
  });

  adminRoute(router, 'POST', '/dashboard/admin/users/:user_id/department', async (req, res) => {
    const user = await liveTarget(req, 'admin.organisation.manage');
    const { department_id } = parseBody(departmentBody, req.body);
    await setUserDepartment(knex, user, department_id, now());
    await note(req, user, 'Department changed', { from: user.department_id, to: department_id });
    await answer(req, res, user.id, 'department');
  });

  adminRoute(router, 'POST', '/dashboard/admin/users/:user_id/org', async (req, res) => {
    const user = await liveTarget(req, 'admin.platform.manage');
    const { org_id } = parseBody(organisationBody, req.body);
    await announcer.announceAll(await moveUserToOrganisation(knex, user, org_id, now()));
    // The keys moved with their spend this month: both organisations' monthly counters are
    // rebuilt from the usage rollup, as after a merge (else what the gateway enforced and the
    // Organisations page showed disagreed until a restart — outside probe).
    await forgetOrganisationCounters(deps.store, [user.organisation_id, org_id], now()).catch((error: unknown) =>
      deps.logger.warn({ err: error }, 'moved; the organisation spend counters are rebuilt when the store is back'),
    );
    await note(req, user, 'Organisation changed', { from: user.organisation_id, to: org_id }, 'a platform administrator');
    await answer(req, res, user.id, 'org');
  });

  // Billing exemption (owners and platform admins): the user's portal keys charge no wallet.
  adminRoute(router, 'POST', '/dashboard/admin/users/:user_id/billing-exempt', async (req, res) => {
    const user = await moneyTarget(req, 'admin.platform.manage', 'billing exemption');
    const body = parseBody(exemptBody, req.body);
    const current = (await knex('users').where({ id: user.id }).first('billing_exempt')) as { billing_exempt: boolean };
    const exempt = body.billing_exempt ?? !current.billing_exempt; // absent: a toggle
    const hashes = await knex.transaction(async (trx) => {
      await trx('users').where({ id: user.id }).update({ billing_exempt: exempt, updated_at: now() });
      return repointPortalKeys(trx, { userId: user.id });
    });
    await announcer.announceAll(hashes);
    await note(
      req,
      user,
      exempt ? 'Exempted from billing' : 'Billing exemption removed',
      { billing_exempt: exempt },
      'a platform administrator',
    );
    await answer(req, res, user.id, 'exempt');
  });

  // Credit limit (org admins and above, for users within their reach, as the portal's route table
  // says): how far below zero the user's wallet may go. Never one's own (moneyTarget); every
  // change is in the user's activity with who made it.
  adminRoute(router, 'POST', '/dashboard/admin/users/:user_id/credit-limit', async (req, res) => {
    const user = await moneyTarget(req, 'admin.organisation.manage', 'credit limit');
    const { credit_limit_usd } = parseBody(creditBody, req.body);
    const bounded = !roleAtLeast(req.user!.role, 'platform_admin');
    if (bounded) boundOrgAdminCredit(user, credit_limit_usd);
    // The organisation's total is checked and the limit set under a lock on the organisation's row,
    // so two admins' concurrent grants cannot pass the bound together. The user's row is locked
    // first — the order a billing-user nomination takes — so a nomination of them and this grant
    // wait for each other: whichever comes second sees the other (mayGiveCredit, one rule for both).
    const hashes = await knex.transaction(async (trx) => {
      if (bounded) {
        await trx('users').where({ id: user.id }).forUpdate().first('id');
        await boundOrganisationCredit(trx, user, credit_limit_usd);
      }
      if (credit_limit_usd !== null && credit_limit_usd > 0 && !(await mayGiveCredit(trx, req.user!, user.id)))
        throw new ApiError('forbidden', {
          param: 'credit_limit_usd',
          humanMessage: 'This wallet pays for your own keys, so its credit is not yours to set; another administrator can',
        });
      return setCreditLimit(trx, user.id, credit_limit_usd, now());
    });
    // The gateways read the credit with each key the wallet pays for.
    await announcer.announceAll(hashes);
    await note(req, user, `Credit limit set to ${usdNote(credit_limit_usd)}`, { credit_limit_usd });
    await answer(req, res, user.id, 'credit');
  });

  /** Saves the user's monthly budget and publishes the cap the gateways enforce. */
  const saveMonthlyBudget = (user: AdministeredUser, usd: number | null) =>
    setMonthlyBudget(knex, deps.store, user.id, usd, now(), (error) =>
      deps.logger.warn({ err: error, userId: user.id }, 'monthly budget saved; gateways pick it up within a minute'),
    );

  // Monthly budget (owners and platform admins): a cap on what the user's keys spend in a month.
  adminRoute(router, 'POST', '/dashboard/admin/users/:user_id/monthly-budget', async (req, res) => {
    const user = await moneyTarget(req, 'admin.platform.manage', 'monthly budget');
    const { monthly_budget_usd } = parseBody(monthlyBudgetBody, req.body);
    await saveMonthlyBudget(user, monthly_budget_usd);
    await note(req, user, `Monthly budget set to ${usdNote(monthly_budget_usd)}`, { monthly_budget_usd }, 'a platform administrator');
    await answer(req, res, user.id, 'budget');
  });

  // Billing configuration (owners and platform admins): one authorised spending limit, applied as
  // credit for a user paying from their own wallet, else as their monthly budget.
  adminRoute(router, 'POST', '/dashboard/admin/users/:user_id/billing-config', async (req, res) => {
    const user = await moneyTarget(req, 'admin.platform.manage', 'spending limit');
    const { spending_limit_usd } = parseBody(billingConfigBody, req.body);
    const config = await billingConfigOf(knex, user.id);
    if (config.applied_as === 'credit_limit') await announcer.announceAll(await setCreditLimit(knex, user.id, spending_limit_usd, now()));
    else await saveMonthlyBudget(user, spending_limit_usd);
    await note(
      req,
      user,
      `Spending limit set to ${usdNote(spending_limit_usd)} (${config.mode.replaceAll('_', ' ')}: ${config.applied_as.replace('_', ' ')})`,
      { spending_limit_usd, mode: config.mode, applied_as: config.applied_as },
      'a platform administrator',
    );
    if (wantsJson(req))
      return res.json({ ok: true, user: await findAdministeredUser(knex, user.id), billing: await billingConfigOf(knex, user.id) });
    await answer(req, res, user.id, 'config');
  });

  adminRoute(router, 'POST', '/dashboard/admin/users/:user_id/hard-delete', async (req, res) => {
    const user = await liveTarget(req, 'admin.organisation.manage');
    parseBody(deleteBody, req.body);
    // The user's keys, revoked, and those of the members they paid for, re-pointed.
    const changed = await hardDeleteUser(knex, req.user!, user, now());
    await announcer.announceAll(changed);
    deps.logger.info({ userId: user.id, by: req.user!.id, keysAnnounced: changed.length }, 'user hard-deleted');
    await answer(req, res, user.id, 'deleted');
  });

  return router;
}
