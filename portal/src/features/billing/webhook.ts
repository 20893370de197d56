// POST /api/billing/processor/webhook: the processor's signed events. Mounted in app.ts before
// the body parsers and the same-origin check — the signature is computed over the exact bytes
// sent, so the body is read raw here, and the caller is the processor, not a browser page.
import express, { Router } from 'express';
import { webhookPath } from '../../../../core/billing/index.js';
import type { PortalDeps } from '../../deps.js';

/** The webhook route alone. */
export function billingWebhookRouter(deps: Pick<PortalDeps, 'billing' | 'logger'>): Router {
  const router = Router();
  // Any content type: the processor sends JSON, but the bytes are what is verified.
  router.post(webhookPath, express.raw({ type: () => true, limit: '1mb' }), async (req, res) => {
    const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const result = await deps.billing.service.receiveWebhook(body, req.get('stripe-signature'));
    deps.logger.info({ outcome: result.outcome, payment: result.paymentId }, 'processor event');
    // 2xx for every verified event, used or not: the processor stops redelivering it.
    res.json({ received: true, outcome: result.outcome });
  });
  return router;
}
