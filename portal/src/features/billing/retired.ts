// Billing endpoints an earlier portal had, kept so old clients get a clear answer instead of a
// 404, and guaranteed to change nothing: they read no body and touch no table.
//
// - Direct crediting (`POST /api/billing/add-funds`) is removed: money enters a wallet only
//   through the processor's checkout, confirmed by its signed event → 403 replacement_required.
// - The card routes in the singular, with integer ids of a local card table, are retired in
//   favour of hosted setup and `/api/billing/payment-methods/{pm_id}` → 403 replacement_required.
// - Partner account linking is retired with no replacement → 501 not_implemented.
import { Router } from 'express';
import { z } from 'zod';
import { ApiError } from '../../../../core/errors/index.js';
import { validate } from '../../web/validation.js';

const integerPmId = z.object({ pm_id: z.string().regex(/^[1-9][0-9]{0,15}$/, 'must be a positive integer (the retired card id)') });

const replaced = (what: string, replacement: string) => () => {
  throw new ApiError('replacement_required', {
    humanMessage: `${what}; use ${replacement} instead. Nothing was changed`,
    details: { replacement },
  });
};

/** The removed and retired routes. */
export function retiredBillingRouter(): Router {
  const router = Router();
  router.post(
    '/api/billing/add-funds',
    replaced('Direct crediting was removed: funds are added only through a processor checkout', 'POST /api/billing/checkout'),
  );
  router.post(
    '/api/billing/payment-method',
    replaced('Saving a card here was removed: cards are saved on the processor’s hosted page', 'POST /api/billing/payment-methods/setup'),
  );
  router.delete(
    '/api/billing/payment-method/:pm_id',
    validate({ params: integerPmId }),
    replaced('This card route is retired and no local card record exists', 'DELETE /api/billing/payment-methods/{pm_id}'),
  );
  router.post(
    '/api/billing/payment-method/:pm_id/default',
    validate({ params: integerPmId }),
    replaced('This card route is retired', 'POST /api/billing/payment-methods/{pm_id}/default'),
  );
  for (const path of ['/api/billing/link-partner', '/api/billing/unlink-partner'])
    router.post(path, () => {
      throw new ApiError('not_implemented', { humanMessage: 'Partner account linking is retired; nothing was changed' });
    });
  return router;
}
