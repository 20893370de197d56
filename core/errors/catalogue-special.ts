// Codes with a specific action (docs/errors.md): each code carries the action the gateway API gives it.
// Most of these touch money or side effects that may already have happened, so the statuses are
// chosen to keep clients from blindly repeating the call: holds and unconfirmed outcomes are 409
// (the resource is in a state that needs reconciling), payer problems 402, and only the two
// transient conditions (edge_error, identity_execution_capacity) are retryable.
import type { CatalogueEntry, CatalogueGroup } from './catalogue-types.js';

/** A special-table entry: unlike group entries it must carry its own action. */
type SpecialEntry = CatalogueEntry & { readonly action: string };

// The API lists payment_required and byok_budget_unknown in one row with one action.
const payerAction =
  'Review the effective payer, balance, spending limits and payment configuration. Contact the billing administrator before retrying.';

/** Codes with their own action, as data. */
export const specialErrors = {
  group: 'special',
  retryable: false,
  entries: {
    billing_limit_reached: {
      // 403 is fixed by docs/spec-conformance.md 7.4: a different API key cannot fund the payer.
      status: 403,
      message: 'The account paying for this request has reached its billing limit or has no funds left',
      action:
        'Check the effective payer, funds, spending limits and billing configuration. Fund the payer or contact its billing administrator. Retry only after correction.',
    },
    budget_exceeded: {
      // 402 rather than 429: the cap holds until a reset or a raised limit, not for a few seconds.
      status: 402,
      message: 'This API key has used its whole budget for the current period',
      action:
        'Review key budget and usage. Raise an authorized limit or wait for the reset. Wallet funds alone may not resolve a budget cap.',
    },
    atomic_canary_manual_review: {
      status: 409,
      message: 'This operation is held for manual review and its outcome is not final yet',
      action: 'Do not repeat the operation or release its hold. Give support the request ID.',
    },
    atomic_canary_unknown: {
      status: 409,
      message: 'The outcome of this operation at the supplier is unknown and must be reconciled',
      action: 'Do not repeat the operation or release its hold. Give support the request ID to reconcile supplier outcome and settlement.',
    },
    csrf_rejected: {
      status: 403,
      message: "The browser request did not come from the portal's own origin",
      action: 'The browser request failed the same-origin check. Reload on the correct portal domain, sign in again and repeat.',
    },
    edge_error: {
      status: 502,
      retryable: true,
      message: 'The edge could not reach the application service',
      action: 'The edge could not reach the application service. Retry with bounded exponential backoff; contact support if persistent.',
    },
    identity_execution_capacity: {
      status: 429,
      retryable: true,
      message: 'The selected identity has no free capacity to run this request right now',
      action:
        'The selected identity has no capacity. Wait for current work to finish; respect Retry-After and retryable/reallocate metadata; do not switch identities when reallocation is forbidden.',
    },
    realtime_call_recovery_required: {
      status: 409,
      message: 'The original realtime call must be recovered before anything else happens to it',
      action: 'Do not create a replacement call. Give support the request ID to recover the original call and its billing state.',
    },
    requester_bridge_required_unavailable: {
      // 503 but not retryable: the bridge needs an administrator, not time.
      status: 503,
      message: 'This workflow needs the requester bridge, which is not available',
      action: 'Have the administrator restore the bridge or choose a supported workflow. Do not retry an unsupported route repeatedly.',
    },
    settlement_pending: {
      status: 409,
      message: 'The document was converted, but settlement of its zero-cost charge is still pending',
      action:
        'Document conversion succeeded and zero-cost settlement is pending. Keep the original body and Idempotency-Key when checking. Do not use a new key; contact support if pending persists.',
    },
    stream_error: {
      status: 502,
      message: 'The response stream could not be completed, so the output is incomplete',
      action:
        'The stream could not be completed. Treat output as incomplete and reconcile side effects before retrying non-idempotent work.',
    },
    stream_interrupted: {
      status: 502,
      message: 'The response stream stopped before it was complete',
      // The API says "The stream stopped early. Same action as stream_error."; spelled out here
      // so the rendered action does not send the reader to another code.
      action: 'The stream stopped early. Treat output as incomplete and reconcile side effects before retrying non-idempotent work.',
    },
    streaming_settlement_buffer_exceeded: {
      // 500, not 413: the request was fine; the response outgrew the settlement buffer we hold.
      status: 500,
      message: 'The streamed response outgrew the buffer used to settle its cost',
      action: 'Have support reconcile the original operation, then reduce response size or correct the authorized buffer configuration.',
    },
    streaming_settlement_cancelled: {
      status: 409,
      message: 'The stream was cancelled before its cost was settled, and the supplier may still have done the work',
      action: 'Cancellation does not prove the supplier did no work. Do not repeat until support confirms execution and billing.',
    },
    streaming_settlement_failed: {
      status: 502,
      message: 'The cost of the streamed response could not be settled, so the operation is unconfirmed',
      action: 'Treat the operation as unconfirmed. Do not repeat until support reconciles using the request ID.',
    },
    supplier_price_unresolved: {
      status: 503,
      message: "The supplier's price for this request could not be confirmed",
      action:
        'Supplier pricing authority could not be confirmed. Have an administrator restore the pricing configuration and check whether the request already executed. This may occur before or after supplier execution.',
    },
    supplier_settlement_failed: {
      status: 502,
      message: 'Usage could not be settled with the supplier after the request may have run',
      action: 'Usage settlement unconfirmed after possible execution. Do not repeat. Give support the request ID.',
    },
    supplier_settlement_unavailable: {
      status: 503,
      message: 'Supplier settlement is unavailable, so the outcome of this operation is unconfirmed',
      action: 'Do not repeat automatically. Have support confirm the original operation and billing before authorizing a retry.',
    },
    payment_required: {
      status: 402,
      message: 'Payment is required before this request can run',
      action: payerAction,
    },
    byok_budget_unknown: {
      // Fail closed: without a known budget for the customer's own key we cannot authorise spend.
      status: 402,
      message: 'The budget for your own provider key could not be determined, so the request was not run',
      action: payerAction,
    },
  },
} as const satisfies CatalogueGroup<Readonly<Record<string, SpecialEntry>>>;
