// The billing JSON API under /api/billing (docs/billing.md "Endpoints"): checkout, its
// confirmation, processor configuration, saved cards, payment history, automatic top-up. Every
// route needs a signed-in user; path and query parameters are checked before any handler (422).
import { Router, type Request } from 'express';
import { z } from 'zod';
import { autoTopupPolicyVersion, paymentMethodIdPattern } from '../../../../core/billing/index.js';
import type { PortalDeps } from '../../deps.js';
import { applyPathParamRules } from '../../web/path-params.js';
import { requireAction } from '../../web/principal.js';
import { parseBody, singleString, validate, wholeNumberParam } from '../../web/validation.js';

const pageQuery = z.strictObject({
  limit: wholeNumberParam(100).optional(),
  before: z
    .string()
    .regex(/^[1-9][0-9]{0,15}$/, 'must be a payment id from the previous page')
    .transform(Number)
    .optional(),
});

const statusQuery = z.strictObject({
  session_id: singleString(255).regex(/^cs_[A-Za-z0-9_]{1,250}$/, 'must be the checkout session id of the redirect'),
});

const pmParams = z.object({ pm_id: z.string().regex(paymentMethodIdPattern, 'must be a saved card id (pm_…)') });
const operationParams = z.object({ operation_id: z.string().min(1).max(200, 'must be at most 200 characters') });

const checkoutBody = z.strictObject({ amount: z.union([z.number(), z.string()], { message: 'must be a number of US dollars' }) });

const money = z.union([z.number(), z.string()], { message: 'must be a number of US dollars' });
const flag = z
  .union([z.boolean(), z.enum(['true', 'false', 'on', '1', '0'])])
  .transform((v) => v === true || v === 'true' || v === 'on' || v === '1');
const autoTopupBody = z.object({
  version: z.union(
    [
      z.number().int().min(0),
      z
        .string()
        .regex(/^[0-9]{1,9}$/)
        .transform(Number),
    ],
    {
      message: 'must be the version of the settings you are replacing (0 when there are none)',
    },
  ),
  enabled: flag,
  threshold_usd: money.optional(),
  amount_usd: money.optional(),
  monthly_cap_usd: money.optional(),
  consent: flag.optional(),
  policy_version: z.string().max(32).optional(),
});

/** Whether a request is a plain HTML form post that expects a page (and so a redirect). */
export function isFormPost(req: Request): boolean {
  return req.is('application/x-www-form-urlencoded') === 'application/x-www-form-urlencoded' && req.accepts(['json', 'html']) === 'html';
}

/** /api/billing/* (JSON). */
export function billingApiRouter(deps: PortalDeps): Router {
  const router = Router();
  applyPathParamRules(router);
  const billing = () => deps.billing.service;
  const guard = requireAction('billing.manage');

  router.get('/api/billing/processor-config', guard, (_req, res) => {
    res.json({ ...billing().processorConfig(), auto_topup_policy_version: autoTopupPolicyVersion });
  });

  router.post('/api/billing/checkout', guard, async (req, res) => {
    const { amount } = parseBody(checkoutBody, req.body);
    const started = await billing().startCheckout(req.user!, amount);
    if (isFormPost(req)) return res.redirect(303, started.url);
    res.json({
      ok: true,
      url: started.url,
      payment_id: started.paymentId,
      payer: started.payer.payerId,
      // wallet_usd, credit_usd and total_usd mean what they mean in /api/billing/payments: nothing
      // has reached the wallet yet, credit_usd is what will once paid. amount_usd (the wallet
      // credit here, the card charge there) is kept for clients written against it.
      amount_usd: started.collection.creditCents / 100,
      wallet_usd: 0,
      credit_usd: started.collection.creditCents / 100,
      fee_usd: started.collection.feeCents / 100,
      total_usd: started.collection.totalCents / 100,
    });
  });

  router.get('/api/billing/checkout-status', guard, validate({ query: statusQuery }), async (req, res) => {
    res.json(await billing().checkoutStatus(req.user!, (req.valid!.query as z.infer<typeof statusQuery>).session_id));
  });

  router.post('/api/billing/payment-methods/setup', guard, async (req, res) => {
    const { url } = await billing().startSetup(req.user!);
    if (isFormPost(req)) return res.redirect(303, url);
    res.json({ ok: true, url });
  });

  router.get('/api/billing/payment-methods', guard, async (req, res) => {
    const methods = await billing().paymentMethods(req.user!);
    res.json({ object: 'list', ...methods });
  });

  router.delete('/api/billing/payment-methods/:pm_id', guard, validate({ params: pmParams }), async (req, res) => {
    await billing().removePaymentMethod(req.user!, String(req.params.pm_id));
    res.json({ ok: true, deleted: req.params.pm_id });
  });

  router.post('/api/billing/payment-methods/:pm_id/default', guard, validate({ params: pmParams }), async (req, res) => {
    await billing().setDefaultPaymentMethod(req.user!, String(req.params.pm_id));
    if (isFormPost(req)) return res.redirect(303, '/dashboard/billing?notice=default_card');
    res.json({ ok: true, default_payment_method: req.params.pm_id });
  });

  router.get('/api/billing/payments', guard, validate({ query: pageQuery }), async (req, res) => {
    const query = req.valid!.query as z.infer<typeof pageQuery>;
    const page = await billing().payments(req.user!, {
      limit: query.limit ?? 25,
      ...(query.before !== undefined && { before: query.before }),
    });
    res.json({
      object: 'list',
      payer: page.payer.payerId,
      data: page.data,
      next_before: page.nextBefore,
      has_more: page.nextBefore !== null,
    });
  });

  router.get('/api/billing/auto-topup', guard, async (req, res) => {
    const payer = await billing().payerOf(req.user!);
    res.json({ payer: payer.payerId, ...(await deps.billing.autoTopup.view(payer.payerId)) });
  });

  router.post('/api/billing/auto-topup', guard, async (req, res) => {
    const body = parseBody(autoTopupBody, req.body);
    const saved = await deps.billing.autoTopup.save(req.user!, body);
    if (isFormPost(req)) return res.redirect(303, '/dashboard/billing?notice=auto_topup');
    res.json(saved);
  });

  router.get('/api/billing/auto-topup/operations/:operation_id', guard, validate({ params: operationParams }), async (req, res) => {
    res.json(await deps.billing.autoTopup.operation(req.user!, String(req.params.operation_id)));
  });

  return router;
}
