// The processor objects the local test processor keeps, in the shapes the official library's
// types describe (the subset the portal reads), and the test cards it understands — the
// processor's own documented test numbers, so a page or a test behaves as it would in test mode.
import { randomBytes } from 'node:crypto';

/** A processor-style id: `cs_test_…`, `pi_…`. */
export function objectId(prefix: string): string {
  return `${prefix}_${randomBytes(12).toString('base64url').replace(/[-_]/g, 'x')}`;
}

/** What a test card does. */
export type CardBehaviour =
  | { kind: 'succeeds' }
  /** Refused when entered (checkout or saving). */
  | { kind: 'declined'; code: string; declineCode: string; message: string }
  /** Saved fine; every later charge is declined. */
  | { kind: 'declines_charges'; declineCode: string }
  /** Saved fine; every off-session charge needs the cardholder. */
  | { kind: 'requires_authentication' };

/** The test cards (the processor's documented numbers). Any other number is refused as invalid. */
export const testCards: Record<string, { brand: string; behaviour: CardBehaviour }> = {
  '4242424242424242': { brand: 'visa', behaviour: { kind: 'succeeds' } },
  '5555555555554444': { brand: 'mastercard', behaviour: { kind: 'succeeds' } },
  '4000000000000002': {
    brand: 'visa',
    behaviour: { kind: 'declined', code: 'card_declined', declineCode: 'generic_decline', message: 'Your card was declined.' },
  },
  '4000000000009995': {
    brand: 'visa',
    behaviour: { kind: 'declined', code: 'card_declined', declineCode: 'insufficient_funds', message: 'Your card has insufficient funds.' },
  },
  '4000000000000341': { brand: 'visa', behaviour: { kind: 'declines_charges', declineCode: 'generic_decline' } },
  '4000002760003184': { brand: 'visa', behaviour: { kind: 'requires_authentication' } },
};

export interface Customer {
  id: string;
  object: 'customer';
  email: string | null;
  name: string | null;
  metadata: Record<string, string>;
  invoice_settings: { default_payment_method: string | null };
  created: number;
  livemode: false;
}

export interface PaymentMethod {
  id: string;
  object: 'payment_method';
  type: 'card';
  card: { brand: string; last4: string; exp_month: number; exp_year: number; funding: 'credit'; country: 'US' };
  customer: string | null;
  billing_details: { name: string | null; email: string | null };
  metadata: Record<string, string>;
  created: number;
  livemode: false;
  /** Not part of the processor's shape: the number's behaviour, kept server-side. */
  behaviour?: CardBehaviour;
}

export interface CheckoutSession {
  id: string;
  object: 'checkout.session';
  mode: 'payment' | 'setup';
  status: 'open' | 'complete' | 'expired';
  payment_status: 'unpaid' | 'paid' | 'no_payment_required';
  amount_subtotal: number | null;
  amount_total: number | null;
  currency: string | null;
  customer: string | null;
  client_reference_id: string | null;
  metadata: Record<string, string>;
  payment_intent: string | null;
  setup_intent: string | null;
  success_url: string;
  cancel_url: string | null;
  url: string | null;
  created: number;
  expires_at: number;
  livemode: false;
  /** Kept for the hosted page (the processor returns them through a separate list call). */
  line_items: { name: string; unit_amount: number; quantity: number }[];
  payment_intent_metadata: Record<string, string>;
}

export interface PaymentIntent {
  id: string;
  object: 'payment_intent';
  amount: number;
  amount_received: number;
  currency: string;
  customer: string | null;
  payment_method: string | null;
  status: 'requires_payment_method' | 'processing' | 'succeeded' | 'canceled';
  metadata: Record<string, string>;
  latest_charge: string | null;
  last_payment_error: { code: string; decline_code?: string; message: string; type: 'card_error' } | null;
  created: number;
  livemode: false;
}

export interface Charge {
  id: string;
  object: 'charge';
  amount: number;
  amount_captured: number;
  amount_refunded: number;
  refunded: boolean;
  paid: true;
  status: 'succeeded';
  currency: string;
  customer: string | null;
  payment_intent: string;
  payment_method: string | null;
  metadata: Record<string, string>;
  created: number;
  livemode: false;
}

export interface Refund {
  id: string;
  object: 'refund';
  amount: number;
  charge: string;
  payment_intent: string;
  currency: string;
  /** `failed` when the bank could not pay it back (failRefund), with the reason. */
  status: 'succeeded' | 'failed';
  failure_reason?: string;
  created: number;
}

/** A webhook event as the processor sends it. */
export interface ProcessorEvent {
  id: string;
  object: 'event';
  api_version: string;
  created: number;
  data: { object: unknown };
  livemode: false;
  pending_webhooks: number;
  request: { id: string | null; idempotency_key: string | null };
  type: string;
}

/** A payment method as the API returns it (the behaviour stays server-side). */
export function publicPaymentMethod(pm: PaymentMethod): Omit<PaymentMethod, 'behaviour'> {
  const { behaviour: _behaviour, ...shown } = pm;
  return shown;
}

/** A session as the API returns it. */
export function publicSession(session: CheckoutSession): Omit<CheckoutSession, 'line_items' | 'payment_intent_metadata'> {
  const { line_items: _items, payment_intent_metadata: _meta, ...shown } = session;
  return shown;
}
