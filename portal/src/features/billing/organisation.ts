// An organisation's billing, for its administrators (docs/billing.md "Who pays"):
//   POST /dashboard/admin/organisation/billing-user  {user_id}  nominate (or clear with "") the payer
//        every member inherits; members' portal keys follow at once on every gateway replica
//   POST /dashboard/admin/organisation/monthly-budget {monthly_budget}  a cap (USD, "" = none) on
//        what members' portal keys spend together per UTC month, enforced by every gateway
//        (core/budget/organisation.ts) from the next request
//   POST /dashboard/admin/organisation/settings      {billing_email}  where billing mail goes
// Both act on the caller's organisation; owners and platform admins may name another with org_id.
// JSON callers get the organisation's billing facts; forms are sent back to /dashboard/billing.
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { nominateBillingUser, organisationBilling, saveOrganisationBillingEmail } from '../../../../core/billing/index.js';
import { republishSpendGroupCap } from '../../../../core/budget/index.js';
import { ApiError } from '../../../../core/errors/index.js';
import { KeyAnnouncer } from '../../../../core/keys/index.js';
import type { PortalDeps } from '../../deps.js';
import { adminRoute } from '../admin/route-table.js';
import { noteActivity } from '../../web/activity.js';
import { wantsJson } from '../../web/errors.js';
import { parseBody, usdAmountOrNone } from '../../web/validation.js';
import { idField, targetOrganisation } from '../../web/target-organisation.js';
import { emailAddress } from '../../../../core/identity/email.js';
import { findAdministeredUser, mayAdminister, noSuchUser } from '../../../../core/identity/index.js';

const id = idField;
const orgField = { org_id: id.optional() };
const billingUserBody = z.object({
  ...orgField,
  user_id: z.union([id, z.literal(''), z.null()], { message: 'must be a member’s user id, or empty to clear' }),
});
const monthlyBudgetBody = z.object({
  ...orgField,
  monthly_budget: usdAmountOrNone,
});
const settingsBody = z.object({
  ...orgField,
  billing_email: z.union([z.literal(''), z.null(), emailAddress]),
});

export function organisationBillingRouter(deps: PortalDeps): Router {
  const router = Router();
  const knex = deps.database;
  const announcer = new KeyAnnouncer(deps.store, { logger: (facts, message) => deps.logger.warn(facts, message) });

  const answer = async (req: Request, res: Response, organisationId: number, notice: string) => {
    if (wantsJson(req)) return res.json({ ok: true, organisation: await organisationBilling(knex, organisationId) });
    res.redirect(303, `/dashboard/billing?notice=${notice}`);
  };

  adminRoute(router, 'POST', '/dashboard/admin/organisation/billing-user', async (req, res) => {
    const body = parseBody(billingUserBody, req.body);
    const organisationId = targetOrganisation(req, body.org_id);
    const userId = body.user_id === '' || body.user_id === null ? null : body.user_id;
    // The nominee is within the caller's reach as on the users routes (docs/administration.md
    // "Reach"): one of a higher role, or outside it, answers 404 as one that does not exist.
    if (userId !== null) {
      const nominee = await findAdministeredUser(knex, userId);
      if (!nominee || !mayAdminister(req.user!, 'billing.organisation.manage', nominee)) throw noSuchUser();
    }
    const changed = await nominateBillingUser(knex, organisationId, userId, req.user!);
    // A store outage leaves the announcement owed (retried); the database already holds the change.
    await announcer.announceAll(changed);
    await noteActivity(deps, {
      userId: req.user!.id,
      kind: 'organisation_billing_changed',
      summary: userId === null ? 'Cleared the organisation’s billing user' : `Nominated user #${userId} to pay for the organisation`,
      details: { organisation_id: organisationId, billing_user_id: userId, keys_repointed: changed.length },
    });
    await answer(req, res, organisationId, 'billing_user');
  });

  adminRoute(router, 'POST', '/dashboard/admin/organisation/monthly-budget', async (req, res) => {
    const body = parseBody(monthlyBudgetBody, req.body);
    const organisationId = targetOrganisation(req, body.org_id);
    const budget = body.monthly_budget;
    const updated = await knex('organisations')
      .where({ id: organisationId })
      .update({ monthly_budget: budget === null ? null : budget.toFixed(6) });
    if (updated === 0) throw new ApiError('not_found', { humanMessage: 'There is no such organisation' });
    // Every gateway reads the cap from the store: written now, it applies from the next request.
    // If the store is unreachable, the gateways re-read PostgreSQL within a minute anyway.
    await republishSpendGroupCap(knex, deps.store, { scope: 'organisation', id: organisationId }, (error: unknown) =>
      deps.logger.warn({ err: error, organisationId }, 'organisation budget saved; gateways pick it up within a minute'),
    );
    await noteActivity(deps, {
      userId: req.user!.id,
      kind: 'organisation_billing_changed',
      summary: budget === null ? 'Removed the organisation’s monthly budget' : `Set the organisation’s monthly budget to $${budget}`,
      details: { organisation_id: organisationId, monthly_budget: budget },
    });
    await answer(req, res, organisationId, 'organisation_budget');
  });

  adminRoute(router, 'POST', '/dashboard/admin/organisation/settings', async (req, res) => {
    const body = parseBody(settingsBody, req.body);
    const organisationId = targetOrganisation(req, body.org_id);
    await saveOrganisationBillingEmail(knex, organisationId, body.billing_email || null);
    await noteActivity(deps, {
      userId: req.user!.id,
      kind: 'organisation_billing_changed',
      summary: 'Saved the organisation’s billing settings',
      details: { organisation_id: organisationId },
    });
    await answer(req, res, organisationId, 'organisation_settings');
  });

  return router;
}
