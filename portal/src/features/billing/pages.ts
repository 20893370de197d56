// The billing pages (docs/billing.md "Pages"): /dashboard/billing (balance, ledger, spend chart,
// payments, saved cards, automatic top-up) and /dashboard/billing/fund (amount → the fee shown →
// the processor's hosted page → the confirmation). Every form works without JavaScript; the
// confirmation refreshes itself until the processor's signed event has credited the wallet.
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import {
  autoTopupPolicyVersion,
  describeFeePolicy,
  formatCents,
  movedWallet,
  organisationBilling,
  paymentMethodIdPattern,
} from '../../../../core/billing/index.js';
import { ApiError } from '../../../../core/errors/index.js';
import { wantsJson } from '../../web/errors.js';
import { spendGroupMonthSpend } from '../../../../core/budget/index.js';
import { isAllowed, type User } from '../../../../core/identity/index.js';
import type { PortalDeps } from '../../deps.js';
import { applyPathParamRules } from '../../web/path-params.js';
import { requireAction } from '../../web/principal.js';
import { maxRowId, parseBody, validate, wholeNumberParam } from '../../web/validation.js';
import { emptyFormPage, refusedFiltersPage, typedValue, withFormPage, type FormPage } from '../../web/form-issues.js';
import { FormClaims, newFormToken, sentFormToken } from '../../web/form-claims.js';
import { spendChart } from './chart.js';
import { creditedWallet, walletWords } from './wallet-words.js';

/** Notices after a redirect, from a fixed list so the address cannot inject text. */
const notices: Record<string, string> = {
  default_card: 'Default card changed. Automatic top-ups charge it from now on.',
  card_removed: 'Card removed from your wallet.',
  auto_topup: 'Automatic top-up settings saved.',
  card_saved: 'Card saved. It is your default card if you had none.',
  billing_user: 'Billing user saved. Members’ keys are charged to the new payer from now on.',
  organisation_settings: 'Organisation billing settings saved.',
  organisation_budget: 'Organisation monthly budget saved. Every gateway enforces it from the next request.',
};

const fundQuery = z.strictObject({
  amount: z.string().max(32).optional(),
  session_id: z
    .string()
    .regex(/^cs_[A-Za-z0-9_]{1,250}$/, 'must be the checkout session id of the redirect')
    .optional(),
  cancelled: z
    .string()
    .regex(/^[1-9][0-9]{0,15}$/, 'must be a payment id')
    .optional(),
  /** The cancel link's proof that the processor sent the browser back (core/billing cancelProof). */
  proof: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,100}$/, 'must be the proof of the cancel link')
    .optional(),
});

const billingQuery = z.strictObject({
  notice: z.string().max(32).optional(),
  setup_session: z
    .string()
    .regex(/^cs_[A-Za-z0-9_]{1,250}$/)
    .optional(),
  /** The payments table's page: those older than this payment id (the next_before of the page before). */
  payments_before: wholeNumberParam(maxRowId).optional(),
});

const pmParams = z.object({ pm_id: z.string().regex(paymentMethodIdPattern, 'must be a saved card id (pm_…)') });
const autoTopupForm = z.object({
  version: z
    .string()
    .regex(/^[0-9]{1,9}$/, 'must be the version shown on the page')
    .transform(Number),
  enabled: z.enum(['on', 'off'], { message: 'must be on or off' }),
  threshold_usd: z.string().max(32).optional(),
  amount_usd: z.string().max(32).optional(),
  monthly_cap_usd: z.string().max(32).optional(),
  consent: z.literal('yes').optional(),
  policy_version: z.string().max(32).optional(),
});

/** The processor's hosted pages are another origin: forms on billing pages may go there (303). */
function allowProcessorForms(res: Response, origin: string | undefined): void {
  if (!origin) return;
  const csp = res.get('content-security-policy');
  if (csp)
    res.set(
      'content-security-policy',
      csp.replace(/form-action ([^;]*)/, (_m, list: string) => `form-action ${list} ${origin}`),
    );
}

/** /dashboard/billing and its forms. */
export function billingPagesRouter(deps: PortalDeps): Router {
  const router = Router();
  applyPathParamRules(router);
  const guard = requireAction('billing.manage');
  const billing = () => deps.billing.service;
  const hostedOrigin = () => deps.billing.hostedPageOrigin;
  const fundClaims = new FormClaims(deps.store, deps.logger, 'fund-form');

  /** Everything /dashboard/billing shows, for `user`. */
  const overview = async (user: User, paymentsBefore?: number) => {
    const service = billing();
    const payer = await service.payerOf(user);
    const manages = await service.mayManage(user, payer.payerId);
    const payerUser = payer.userId !== null && payer.userId !== user.id ? await deps.users.findById(payer.userId) : undefined;
    const [statement, spend, payments, autoTopup] = await Promise.all([
      service.statement(payer.payerId, 20),
      service.dailySpend(payer.payerId, 30),
      service.payments(user, { limit: 10, ...(paymentsBefore !== undefined && { before: paymentsBefore }) }),
      deps.billing.autoTopup.view(payer.payerId),
    ]);
    let methods: Awaited<ReturnType<typeof service.paymentMethods>> | undefined;
    let methodsError: string | undefined;
    if (manages && service.configured) {
      try {
        methods = await service.paymentMethods(user);
      } catch (error) {
        methodsError = error instanceof ApiError ? error.humanMessage : 'Saved cards could not be loaded';
      }
    }
    // Organisation administrators also see who pays for their organisation, and change it here.
    const organisation =
      user.organisationId !== null &&
      isAllowed(user, 'billing.organisation.manage', { organisationId: user.organisationId, departmentId: null })
        ? {
            ...(await organisationBilling(deps.database, user.organisationId)),
            spentThisMonthUsd:
              (await spendGroupMonthSpend(deps.database, { scope: 'organisation', id: user.organisationId }, new Date(deps.clock())))
                .spentNano / 1e9,
            members: await deps
              .database('users')
              .where({ organisation_id: user.organisationId, status: 'active' })
              .orderBy('email')
              .limit(500)
              .select('id', 'email', 'display_name'),
          }
        : undefined;
    return {
      config: service.processorConfig(),
      payer,
      payerWallet: walletWords(payer.source),
      organisation,
      payerName: payerUser ? `${payerUser.displayName} (${payerUser.email})` : undefined,
      manages,
      balanceUsd: statement.balanceUsd,
      entries: statement.entries,
      chart: spendChart(spend),
      spendTotal: spend.reduce((sum, d) => sum + d.usd, 0),
      payments: payments.data,
      /** Links of the payments table: older ones, and back to the newest when paged. */
      olderPaymentsHref: payments.nextBefore === null ? undefined : `/dashboard/billing?payments_before=${payments.nextBefore}#payments`,
      paged: paymentsBefore !== undefined,
      methods,
      methodsError,
      autoTopup,
      policyVersion: autoTopupPolicyVersion,
    };
  };

  const renderOverview = async (
    req: Request,
    res: Response,
    extra: { notice?: string; error?: string; status?: number; paymentsBefore?: number; autoTopupForm?: FormPage } = {},
  ) => {
    const data = await overview(req.user!, extra.paymentsBefore);
    // A refused automatic top-up form comes back as typed, each problem beside it (withFormPage).
    const refused = extra.autoTopupForm ?? emptyFormPage;
    allowProcessorForms(res, hostedOrigin());
    res.status(extra.status ?? 200).render('dashboard/billing/index', {
      title: 'Billing',
      section: 'billing',
      cents: formatCents,
      // The Wallet column's dash: the rule wallet_usd follows (core/billing/payments.ts).
      movedWallet,
      notice: extra.notice,
      error: extra.error,
      autoTopupIssues: refused.issues,
      autoTopupTyped:
        refused.issues.length > 0
          ? Object.fromEntries(
              ['threshold_usd', 'amount_usd', 'monthly_cap_usd', 'enabled', 'consent'].map((name) => [
                name,
                typedValue(refused.values[name]),
              ]),
            )
          : undefined,
      ...data,
    });
  };

  router.get(
    '/dashboard/billing',
    guard,
    validate({ query: billingQuery }),
    async (req: Request, res: Response) => {
      const query = req.valid!.query as z.infer<typeof billingQuery>;
      if (wantsJson(req)) {
        const data = await overview(req.user!);
        return void res.json({
          payer: data.payer.payerId,
          payer_source: data.payer.source,
          manages: data.manages,
          balance_usd: data.balanceUsd,
          entries: data.entries,
          payments: data.payments,
          auto_topup: data.autoTopup,
          payment_methods: data.methods?.data ?? null,
          processor: data.config,
        });
      }
      await renderOverview(req, res, {
        notice: query.setup_session ? notices.card_saved : query.notice ? notices[query.notice] : undefined,
        ...(query.payments_before !== undefined && { paymentsBefore: query.payments_before }),
      });
    },
    // A query it refuses (a payments cursor that is not an id): the page as first shown, with the problem.
    refusedFiltersPage((req, res, status, issues) =>
      renderOverview(req, res, {
        status,
        error: issues.map((i) => (i.name ? `${i.name.replace(/_/g, ' ')}: ${i.msg}` : i.msg)).join('; '),
      }),
    ),
  );

  /** What every rendering of the fund page shows, for `user`. */
  const fundPage = async (user: User) => {
    const payer = await billing().payerOf(user);
    return {
      title: 'Add funds',
      section: 'billing',
      config: billing().processorConfig(),
      payer,
      payerWallet: walletWords(payer.source),
      /** The review's "Added to …": the wallet named, not "your wallet" when it is another's. */
      creditedWallet: await creditedWallet(deps.database, payer.payerId, user),
      cents: formatCents,
      policy: describeFeePolicy,
    };
  };

  /** The fund page: the form, the quote for `amount`, the confirmation after the redirect, or a cancel. */
  router.get('/dashboard/billing/fund', guard, validate({ query: fundQuery }), async (req, res) => {
    const query = req.valid!.query as z.infer<typeof fundQuery>;
    const service = billing();
    const base = await fundPage(req.user!);
    allowProcessorForms(res, hostedOrigin());
    if (query.session_id) {
      const status = await service.checkoutStatus(req.user!, query.session_id);
      // Until the signed event arrives the page refreshes itself (no script needed).
      if (status.status === 'pending') res.set('refresh', '2');
      // The wallet this checkout credited (its payer when opened), whose balance the page shows.
      const wallet = await creditedWallet(deps.database, status.payer, req.user!);
      return res.render('dashboard/billing/confirmation', { ...base, title: 'Payment', status, creditedWallet: wallet });
    }
    // Back from the hosted page without paying: that checkout can no longer be paid.
    // Only with the link's proof: another site can send the browser to `?cancelled=<id>` too.
    const cancelled = query.cancelled !== undefined && (await service.cancelCheckout(req.user!, Number(query.cancelled), query.proof));
    let quote;
    let issue: string | undefined;
    if (query.amount !== undefined) {
      try {
        quote = service.quote(query.amount);
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        issue = error.humanMessage;
        res.status(422);
      }
    }
    res.render('dashboard/billing/fund', {
      ...base,
      quote,
      issue,
      amount: query.amount ?? '',
      cancelled,
      formToken: newFormToken(),
    });
  });

  /**
   * Confirms the quote: a hosted checkout, and the browser goes there (303). The form opens one
   * checkout per form token: sent again (a double click, a reload, back and submit) it goes to the
   * checkout the first submission opened, not a second one (each was a pending top-up).
   */
  router.post('/dashboard/billing/fund', guard, async (req, res) => {
    const user = req.user!;
    const amount = (req.body as { amount?: unknown } | undefined)?.amount;
    const token = sentFormToken(req);
    try {
      const opened = await fundClaims.makeOnce(user.id, token, async () => {
        const started = await billing().startCheckout(user, amount);
        return { record: { number: started.paymentId }, url: started.url };
      });
      res.redirect(303, 'made' in opened ? opened.made.url : await billing().openedCheckout(user, Number(opened.already)));
    } catch (error) {
      if (!(error instanceof ApiError) || wantsJson(req)) throw error;
      allowProcessorForms(res, hostedOrigin());
      res.status(error.status).render('dashboard/billing/fund', {
        ...(await fundPage(user)),
        quote: undefined,
        issue: error.humanMessage,
        amount: typeof amount === 'string' ? amount : '',
        cancelled: false,
      });
    }
  });

  /** Form actions of the overview: each redirects back with a notice, or shows the page with the problem. */
  const action = (path: string, run: (req: Request) => Promise<string>) =>
    router.post(path, guard, async (req, res) => {
      try {
        const target = await run(req);
        res.redirect(303, target);
      } catch (error) {
        if (!(error instanceof ApiError) || wantsJson(req)) throw error;
        await renderOverview(req, res, { error: error.humanMessage, status: error.status });
      }
    });

  action('/dashboard/billing/cards/setup', async (req) => (await billing().startSetup(req.user!)).url);
  router.post('/dashboard/billing/cards/:pm_id/default', validate({ params: pmParams }));
  action('/dashboard/billing/cards/:pm_id/default', async (req) => {
    await billing().setDefaultPaymentMethod(req.user!, String(req.params.pm_id));
    return '/dashboard/billing?notice=default_card';
  });
  router.post('/dashboard/billing/cards/:pm_id/remove', validate({ params: pmParams }));
  action('/dashboard/billing/cards/:pm_id/remove', async (req) => {
    await billing().removePaymentMethod(req.user!, String(req.params.pm_id));
    return '/dashboard/billing?notice=card_removed';
  });
  // Refused, the form is shown again as typed with each problem beside it, like the key, budget
  // and settings forms (it came back with the stored values and "Some input is not valid").
  router.post('/dashboard/billing/auto-topup', guard, (req, res) =>
    withFormPage(
      req,
      res,
      async () => {
        const form = parseBody(autoTopupForm, req.body);
        await deps.billing.autoTopup.save(req.user!, {
          version: form.version,
          enabled: form.enabled === 'on',
          threshold_usd: form.threshold_usd,
          amount_usd: form.amount_usd,
          monthly_cap_usd: form.monthly_cap_usd,
          consent: form.consent === 'yes',
          policy_version: form.policy_version,
        });
        res.redirect(303, '/dashboard/billing?notice=auto_topup');
      },
      (status, form) => renderOverview(req, res, { status, autoTopupForm: form }),
    ),
  );

  return router;
}
