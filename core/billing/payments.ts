// The payment history (`billing_payments`): checkout top-ups, automatic top-ups and refunds, each
// with its wallet effect and what the card was charged. Rows are created when a payment starts and
// changed only by the processor's word (webhook events, the answer to an automatic charge).
import type { Knex } from 'knex';
import { centsToUsd, nanoToUsd } from './money.js';

export const paymentKinds = ['checkout', 'auto_topup', 'refund', 'dispute'] as const;
export type PaymentKind = (typeof paymentKinds)[number];

export const paymentStatuses = [
  'pending',
  'succeeded',
  'failed',
  'partially_refunded',
  'refunded',
  'expired',
  // A payment under dispute, and a dispute row's own states.
  'disputed',
  'open',
  'won',
  'lost',
  // A refund the bank could not pay: what it had taken came back to the wallet.
  'returned',
] as const;
export type PaymentStatus = (typeof paymentStatuses)[number];

/**
 * Whether a payment in this status has moved the wallet: the one rule for a payment's wallet
 * effect (presentPayment's wallet_usd, which the payments list, checkout-status and the billing
 * page's Wallet column all show). A top-up pending, failed or expired credited nothing; one
 * succeeded, refunded (in part or in full) or disputed was credited — what refunds and disputes
 * took back is on their own `refund` and `dispute` rows (negative), so the history adds up to
 * what reached the wallet. A refund (succeeded) and a dispute (open, won, lost) show what they
 * took back, net of what a won dispute returned; a `returned` refund (one the bank could not pay)
 * what it gave back (positive).
 */
export const movedWallet: Readonly<Record<PaymentStatus, boolean>> = {
  pending: false,
  failed: false,
  expired: false,
  succeeded: true,
  partially_refunded: true,
  refunded: true,
  disputed: true,
  open: true,
  won: true,
  lost: true,
  returned: true,
};

/** A payment's wallet effect in nano-USD: its credit (or reversal) once it moved the wallet, else 0. */
export const walletEffectNano = (row: Pick<PaymentRow, 'status' | 'credit_nano'>): number =>
  movedWallet[row.status] ? Number(row.credit_nano) : 0;

/** A payment that buys wallet credit (the others, refunds and disputes, take it back). */
export const isTopUp = (kind: PaymentKind): boolean => kind === 'checkout' || kind === 'auto_topup';

/** A row of billing_payments. */
export interface PaymentRow {
  id: string | number;
  payer_id: string;
  user_id: number | null;
  kind: PaymentKind;
  status: PaymentStatus;
  credit_nano: string | number;
  amount_cents: number;
  fee_cents: number;
  currency: string;
  checkout_session_id: string | null;
  payment_intent_id: string | null;
  charge_id: string | null;
  original_payment_id: string | number | null;
  refunded_cents: number;
  reversed_nano: string | number;
  failure_code: string | null;
  failure_message: string | null;
  auto_topup_operation_id: string | null;
  dispute_id?: string | null;
  /** The processor's refund id, on a `returned` refund row only (migration 040). */
  refund_id?: string | null;
  /** The installation id its processor objects carry in their metadata; null on payments made before migration 039 (and on refund and dispute rows). */
  install_id?: string | null;
  created_at: Date;
  updated_at: Date;
  completed_at: Date | null;
}

/** A payment as the API shows it. */
export interface PaymentView {
  payment_id: number;
  kind: PaymentKind;
  status: PaymentStatus;
  /**
   * The wallet effect, USD (walletEffectNano): the credit a top-up added (positive) or what a
   * refund or dispute took back (negative); 0 for a top-up pending, failed or expired. The credit
   * a top-up buys, whatever its status, is total_usd − fee_usd.
   */
  wallet_usd: number;
  /**
   * What a top-up (`checkout`, `auto_topup`) credits the wallet once paid, USD, whatever its status
   * (total_usd − fee_usd); null on `refund` and `dispute` rows, which credit nothing.
   */
  credit_usd: number | null;
  /** Charged to (or refunded to) the card, USD, fee included. */
  amount_usd: number;
  /** The same as amount_usd, under the name the checkout answer gives the card charge (one name for one meaning). */
  total_usd: number;
  fee_usd: number;
  currency: string;
  refunded_usd: number;
  failure_code: string | null;
  failure_message: string | null;
  original_payment_id: number | null;
  auto_topup_operation_id: string | null;
  created: string;
  completed: string | null;
}

export function presentPayment(row: PaymentRow): PaymentView {
  return {
    payment_id: Number(row.id),
    kind: row.kind,
    status: row.status,
    wallet_usd: nanoToUsd(walletEffectNano(row)),
    credit_usd: isTopUp(row.kind) ? nanoToUsd(Number(row.credit_nano)) : null,
    amount_usd: centsToUsd(row.amount_cents),
    total_usd: centsToUsd(row.amount_cents),
    fee_usd: centsToUsd(row.fee_cents),
    currency: row.currency,
    refunded_usd: centsToUsd(row.refunded_cents),
    failure_code: row.failure_code,
    failure_message: row.failure_message,
    original_payment_id: row.original_payment_id === null ? null : Number(row.original_payment_id),
    auto_topup_operation_id: row.auto_topup_operation_id,
    created: new Date(row.created_at).toISOString(),
    completed: row.completed_at ? new Date(row.completed_at).toISOString() : null,
  };
}

/** A page of payments, newest first; `before` is the previous page's last payment id. */
export async function listPayments(
  knex: Knex,
  scope: { payerId: string; userId?: number },
  page: { limit: number; before?: number },
): Promise<{ data: PaymentView[]; nextBefore: number | null }> {
  let query = knex<PaymentRow>('billing_payments').where({ payer_id: scope.payerId });
  if (scope.userId !== undefined) query = query.andWhere({ user_id: scope.userId });
  if (page.before !== undefined) query = query.andWhere('id', '<', page.before);
  const rows = (await query.orderBy('id', 'desc').limit(page.limit + 1)) as PaymentRow[];
  const data = rows.slice(0, page.limit).map(presentPayment);
  return { data, nextBefore: rows.length > page.limit ? (data.at(-1)?.payment_id ?? null) : null };
}

/** Locks and reads one payment inside a transaction. */
export async function lockPayment(
  trx: Knex.Transaction,
  where: Partial<Pick<PaymentRow, 'id' | 'checkout_session_id' | 'payment_intent_id'>>,
) {
  return (await trx<PaymentRow>('billing_payments').where(where).forUpdate().first()) as PaymentRow | undefined;
}
