// Promotions, for platform administrators (docs/administration.md "Promotions"):
//   GET  /dashboard/admin/promotions                    grants of users within reach, newest first, and the form
//   POST /dashboard/admin/promotions/create             {user_id | email, amount_usd, reason, expires_at?, nonce?}
//   POST /dashboard/admin/promotions/{grant_id}/update  {reason?, expires_at? ("" = never), action?: revoke} (within reach)
// Money moves only through core/promotions (ledger entries with unique references); the store
// mirror is updated after commit. Due grants are expired every minute (server.ts) and on page load.
import { randomBytes } from 'node:crypto';
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { toNano } from '../../../../core/budget/index.js';
import { ApiError } from '../../../../core/errors/index.js';
import { createGrant, expireDueGrants, findGrant, listGrants, noSuchGrant, updateGrant } from '../../../../core/promotions/index.js';
import { applyMirrorOutbox } from '../../../../core/wallets/index.js';
import type { PortalDeps } from '../../deps.js';
import { noteActivity } from '../../web/activity.js';
import { wantsJson } from '../../web/errors.js';
import { emptyFormPage, withFormPage, type FormPage } from '../../web/form-issues.js';
import { applyPathParamRules } from '../../web/path-params.js';
import { idField } from '../../web/target-organisation.js';
import { formatUsd } from '../../web/usd.js';
import { parseBody } from '../../web/validation.js';
import { adminRoute } from './route-table.js';
import { isIsoDateOrTime, isoInstant } from '../../../../core/time/index.js';
import { emailAddress } from '../../../../core/identity/email.js';
import { findAdministeredUser, mayAdminister, noSuchUser, userScopeOf } from '../../../../core/identity/index.js';

const amount = z.union(
  [
    z.number().positive().max(100_000),
    z
      .string()
      .trim()
      .regex(/^\d{1,6}(\.\d{1,6})?$/, 'must be an amount in US dollars (up to 6 decimals)')
      .transform(Number)
      .refine((n) => n > 0 && n <= 100_000, 'must be more than 0 and at most 100000'),
  ],
  { message: 'must be an amount in US dollars' },
);
/** An ISO date or date-time; "" or null = no expiry. */
const expiry = z.union([z.string().trim().max(40), z.null()]).transform((v, ctx) => {
  if (v === null || v === '') return null;
  // A day that does not exist (2027-02-30) is refused, not rolled over into the next month.
  if (!isIsoDateOrTime(v)) {
    ctx.addIssue({ code: 'custom', message: 'must be a real date (YYYY-MM-DD) or an ISO date-time, or empty for none' });
    return z.NEVER;
  }
  // A time without a zone is UTC, as everywhere in the portal; a bare date lasts to that day's end.
  return v.includes('T') ? isoInstant(v) : new Date(`${v}T23:59:59.999Z`);
});
const reason = z.string().trim().min(1, 'must not be empty').max(400, 'must be at most 400 characters');

const nonce = z.string().regex(/^[A-Za-z0-9_-]{8,100}$/, 'must be 8–100 letters, digits, - or _');
const createBody = z
  .object({
    user_id: idField.optional(),
    email: emailAddress.optional(),
    amount_usd: amount,
    reason,
    expires_at: expiry.optional(),
    nonce: nonce.optional(),
  })
  .refine((b) => (b.user_id === undefined) !== (b.email === undefined), { message: 'give either user_id or email', path: ['user_id'] });
const updateBody = z.object({
  reason: reason.optional(),
  expires_at: expiry.optional(),
  action: z.enum(['update', 'revoke'], { message: 'must be update or revoke' }).optional(),
});

/** Applies committed ledger entries to the store mirror; a failure is swept later by billing. */
function mirrorEntries(deps: PortalDeps, entryIds: number[]): Promise<unknown> {
  return applyMirrorOutbox(deps.database, deps.store, { entryIds }).catch((error: unknown) =>
    deps.logger.warn({ err: error }, 'promotion entries committed; the wallet mirror catches up on the next sweep'),
  );
}

/** Ends the grants past their expiry (server.ts runs it every minute; the admin page on load). */
export async function expireDuePromotions(deps: PortalDeps): Promise<void> {
  await mirrorEntries(deps, await expireDueGrants(deps.database, new Date(deps.clock())));
}

export function adminPromotionsRouter(deps: PortalDeps): Router {
  const router = Router();
  applyPathParamRules(router);
  const knex = deps.database;
  const now = () => new Date(deps.clock());
  const mirror = (entryIds: number[]) => mirrorEntries(deps, entryIds);
  const expireDue = () => expireDuePromotions(deps);

  const answer = async (req: Request, res: Response, grantId: number, notice: string, status = 200) => {
    if (wantsJson(req)) return res.status(status).json({ grant: await findGrant(knex, grantId) });
    res.redirect(303, `/dashboard/admin/promotions?notice=${notice}`);
  };

  /**
   * Whose grants the caller sees: the users routes' reach (docs/administration.md "Reach"), over
   * every organisation (the route is not narrowed to a chosen one) and none of a higher role.
   */
  const reach = (req: Request) => userScopeOf(req.user!);

  const notices: Record<string, string> = {
    created: 'Promotion granted: the wallet is credited.',
    updated: 'Grant saved.',
    revoked: 'Grant revoked: its unspent part was withdrawn.',
  };
  /** The page; after a refused grant, with its status, each problem and what was typed. */
  const showPage = async (req: Request, res: Response, status = 200, form: FormPage = emptyFormPage) => {
    res.status(status).render('dashboard/admin/promotions/index', {
      title: 'Promotions',
      section: 'admin-promotions',
      grants: await listGrants(knex, reach(req)),
      // One nonce per form: submitting it twice creates one grant. A refused form keeps its own.
      nonce: nonce.safeParse(form.values.nonce).data ?? randomBytes(16).toString('base64url'),
      notice: typeof req.query.notice === 'string' ? notices[req.query.notice] : undefined,
      ...form,
    });
  };

  adminRoute(router, 'GET', '/dashboard/admin/promotions', async (req, res) => {
    await expireDue();
    if (wantsJson(req)) return res.json({ data: await listGrants(knex, reach(req)) });
    await showPage(req, res);
  });

  /**
   * Promotional credit is money nobody paid: as with credit limits (users.ts), nobody grants it to
   * themselves, so one administrator's own wallet is only ever credited by another.
   */
  const refuseOwnCredit = (req: Request, userId: number) => {
    if (userId === req.user!.id)
      throw new ApiError('forbidden', {
        param: 'user_id',
        humanMessage: 'You cannot grant promotional credit to yourself; another administrator can',
      });
  };

  adminRoute(router, 'POST', '/dashboard/admin/promotions/create', (req, res) =>
    withFormPage(
      req,
      res,
      () => grantCredit(req, res),
      (status, form) => showPage(req, res, status, form),
    ),
  );

  const grantCredit = async (req: Request, res: Response) => {
    const body = parseBody(createBody, req.body);
    const userId =
      body.user_id ??
      (
        (await knex('users').whereRaw('lower(email) = lower(?)', [body.email!]).whereNull('deleted_at').first('id')) as
          { id: number } | undefined
      )?.id;
    const noSuchEmail = () => new ApiError('not_found', { param: 'email', humanMessage: 'There is no user with this email' });
    if (userId === undefined) throw noSuchEmail();
    // The users routes' reach (docs/administration.md "Reach"): one of a higher role answers as one that does not exist.
    const user = await findAdministeredUser(knex, userId);
    if (!user || !mayAdminister(req.user!, 'admin.platform.manage', user)) throw body.user_id === undefined ? noSuchEmail() : noSuchUser();
    refuseOwnCredit(req, userId);
    const { grant, entryIds } = await createGrant(
      knex,
      {
        userId,
        amountNano: toNano(body.amount_usd),
        reason: body.reason,
        expiresAt: body.expires_at ?? null,
        createdBy: req.user!.id,
        nonce: body.nonce,
      },
      now(),
    );
    await mirror(entryIds);
    if (entryIds.length > 0)
      await noteActivity(deps, {
        userId,
        actorUserId: req.user!.id,
        kind: 'promotion_granted',
        summary: `Received a promotional credit of ${formatUsd(grant.amount_usd)}: ${grant.reason}`,
        details: { grant_id: grant.id, amount_usd: grant.amount_usd, expires_at: grant.expires_at },
      });
    await answer(req, res, grant.id, 'created', entryIds.length > 0 ? 201 : 200);
  };

  adminRoute(router, 'POST', '/dashboard/admin/promotions/:grant_id/update', async (req, res) => {
    const id = Number(req.params.grant_id);
    const body = parseBody(updateBody, req.body);
    const revoke = body.action === 'revoke';
    if (!revoke && body.reason === undefined && body.expires_at === undefined)
      throw new ApiError('validation_error', { status: 422, humanMessage: 'Send reason, expires_at, or action=revoke' });
    // The users routes' reach: a grant of a user out of it (of a higher role) answers as one that does not exist.
    const existing = await findGrant(knex, id);
    const user = existing && (await findAdministeredUser(knex, existing.user_id));
    if (!user || !mayAdminister(req.user!, 'admin.platform.manage', user)) throw noSuchGrant();
    // Revoking one's own grant gives nothing away; a new expiry or reason on it would keep credit.
    if (!revoke) refuseOwnCredit(req, existing!.user_id);
    await mirror(await updateGrant(knex, id, { reason: body.reason, expiresAt: body.expires_at, revoke }, now()));
    await answer(req, res, id, revoke ? 'revoked' : 'updated');
  });

  return router;
}
