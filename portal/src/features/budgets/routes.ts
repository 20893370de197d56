// Budget policies and alerts (docs/budgets.md):
//   GET  /dashboard/budgets                   the caller's and their organisation's policies, consent, recent alerts
//   POST /dashboard/budgets/activate          {amount_usd, thresholds?, hard_stop?, scope?: user | organisation}
//   POST /dashboard/budgets/consent           alerts may be emailed to the caller
//   POST /dashboard/budgets/consent/revoke
//   GET  /dashboard/budgets/alert-history     ?before_id&limit: the caller's own deliveries, read only
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { spendGroupMonthSpend } from '../../../../core/budget/index.js';
import {
  activatePolicy,
  activePolicies,
  alertHistory,
  hasAlertConsent,
  parseThresholds,
  setAlertConsent,
} from '../../../../core/budgets/index.js';
import { ApiError } from '../../../../core/errors/index.js';
import { isAllowed } from '../../../../core/identity/index.js';
import type { PortalDeps } from '../../deps.js';
import { noteActivity } from '../../web/activity.js';
import { wantsJson } from '../../web/errors.js';
import { withFormPage, type FormIssue } from '../../web/form-issues.js';
import { requireAction } from '../../web/principal.js';
import { hasAtMostDecimals } from '../../../../core/budget/index.js';
import { noQuery, parseBody, singleString, validate, wholeNumberParam } from '../../web/validation.js';

/** The largest monthly amount a policy takes, in US dollars. */
const maxAmountUsd = 1_000_000_000;
/** The amount's rule, in one sentence for every way it is refused. */
const amountRule = `must be a positive amount in US dollars such as 250 or 12.50 (up to 6 decimals, at most ${maxAmountUsd.toLocaleString('en-US')})`;
const flag = z.union([z.boolean(), z.enum(['true', 'false', 'on']).transform((v) => v !== 'false')]);
const activateBody = z.strictObject({
  scope: z.enum(['user', 'organisation'], { message: 'must be user or organisation' }).default('user'),
  amount_usd: z
    .union([
      // Up to 6 decimals, as the column keeps: 1e-7 was stored as $0 (every alert then fired at once).
      z.number().refine((n) => hasAtMostDecimals(n, 6), amountRule),
      // Plain decimals only: no exponent (1e3), sign or separators.
      z
        .string()
        .trim()
        .regex(/^\d{1,10}(\.\d{1,6})?$/, amountRule)
        .transform(Number),
    ])
    .pipe(z.number().positive(amountRule).max(maxAmountUsd, amountRule)),
  // Checked in the schema, so that a form with a bad amount and bad thresholds names both at once.
  thresholds: z
    .unknown()
    .optional()
    .transform((value, ctx) => {
      try {
        return parseThresholds(value);
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        ctx.addIssue({ code: 'custom', message: error.humanMessage });
        return z.NEVER;
      }
    }),
  hard_stop: flag.optional(),
});
const historyQuery = z.strictObject({
  before_id: singleString(20)
    .regex(/^[1-9]\d{0,17}$/, 'must be an alert id')
    .transform(Number)
    .optional(),
  limit: wholeNumberParam(100).optional(),
});

export function budgetsRouter(deps: PortalDeps): Router {
  const router = Router();
  const knex = deps.database;
  const now = () => new Date(deps.clock());
  const guard = requireAction('budgets.manage');

  /** The budgets page; after a refused form, again with its issues and what was typed (`form`). */
  const showBudgets = async (
    req: Request,
    res: Response,
    status = 200,
    form?: { issues: FormIssue[]; values: Record<string, unknown> },
  ) => {
    const user = req.user!;
    const [policies, consent, history] = await Promise.all([
      activePolicies(knex, user.id, user.organisationId),
      hasAlertConsent(knex, user.id),
      alertHistory(knex, user.id, { limit: 20 }),
    ]);
    const withSpend = await Promise.all(
      policies.map(async (p) => ({
        ...p,
        spent_usd:
          (await spendGroupMonthSpend(knex, { scope: p.scope, id: p.scope === 'user' ? p.user_id! : p.organisation_id! }, now()))
            .spentNano / 1e9,
      })),
    );
    const mayOrganisation =
      user.organisationId !== null &&
      isAllowed(user, 'billing.organisation.manage', { organisationId: user.organisationId, departmentId: null });
    if (wantsJson(req)) return void res.json({ policies: withSpend, alert_consent: consent, may_set_organisation_policy: mayOrganisation });
    res.status(status).render('dashboard/budgets/index', {
      title: 'Budgets and alerts',
      section: 'budgets',
      policies: withSpend,
      consent,
      history: history.data,
      mayOrganisation,
      form,
    });
  };

  router.get('/dashboard/budgets', guard, noQuery, (req, res) => showBudgets(req, res));

  router.post('/dashboard/budgets/activate', guard, (req, res) =>
    withFormPage(
      req,
      res,
      () => activateFrom(req, res),
      (status, form) => showBudgets(req, res, status, form),
    ),
  );

  const activateFrom = async (req: Request, res: Response) => {
    const body = parseBody(activateBody, req.body);
    const user = req.user!;
    let subjectId = user.id;
    if (body.scope === 'organisation') {
      if (
        user.organisationId === null ||
        !isAllowed(user, 'billing.organisation.manage', { organisationId: user.organisationId, departmentId: null })
      )
        throw new ApiError('forbidden', { humanMessage: "Only your organisation's administrators set its budget policy" });
      subjectId = user.organisationId;
    }
    const policy = await activatePolicy(
      knex,
      deps.store,
      {
        scope: body.scope,
        subjectId,
        amountUsd: body.amount_usd,
        thresholds: body.thresholds,
        hardStop: body.hard_stop ?? false,
        createdBy: user.id,
      },
      (error) => deps.logger.warn({ err: error }, 'budget policy saved; gateways apply its hard stop within a minute'),
    );
    await noteActivity(deps, {
      userId: user.id,
      kind: 'budget_policy_activated',
      summary: `Activated a ${body.scope === 'user' ? 'personal' : 'organisation'} budget policy of $${body.amount_usd} a month${policy.hard_stop ? ' with a hard stop' : ''}`,
      details: { policy_id: policy.policy_id, scope: body.scope },
    });
    if (wantsJson(req)) return void res.status(201).json({ policy });
    res.redirect(303, '/dashboard/budgets');
  };

  for (const [path, consented] of [
    ['/dashboard/budgets/consent', true],
    ['/dashboard/budgets/consent/revoke', false],
  ] as const)
    router.post(path, guard, async (req, res) => {
      await setAlertConsent(knex, req.user!.id, consented, now());
      if (wantsJson(req)) return res.json({ alert_consent: consented });
      res.redirect(303, '/dashboard/budgets');
    });

  router.get('/dashboard/budgets/alert-history', guard, validate({ query: historyQuery }), async (req, res) => {
    const q = req.valid!.query as z.infer<typeof historyQuery>;
    const page = await alertHistory(knex, req.user!.id, { beforeId: q.before_id, limit: q.limit ?? 50 });
    res.set('cache-control', 'private, no-store').json({ object: 'list', ...page });
  });

  return router;
}
