// Automatic top-up state in PostgreSQL: the versioned settings of each payer and its operations.
// Pure data access and the state changes every path shares (the charge's answer and the
// `payment_intent.payment_failed` event may arrive in either order: both end in the same rows).
import type { Knex } from 'knex';
import { postReferencedEntry } from '../wallets/referenced-entries.js';
import type { FollowUp } from './follow-ups.js';
import { nanoToUsd, centsToNano, centsToUsd, formatCents } from './money.js';
import { payerUserId } from './payer.js';
import { receiptFollowUp } from './receipts.js';

/** The current automatic top-up policy text the payer consents to (docs/billing.md). */
export const autoTopupPolicyVersion = '2026-11';

export interface AutoTopupRow {
  payer_id: string;
  version: number;
  enabled: boolean;
  threshold_nano: string | number;
  amount_nano: string | number;
  monthly_cap_nano: string | number;
  policy_version: string;
  consented_by: number | null;
  /** Null when the settings were never turned on. */
  consented_at: Date | null;
  paused_reason: string | null;
  updated_at: Date;
}

/**
 * `unknown`: the processor never gave a definite answer (a 5xx or a lost connection on every
 * attempt under the operation's key, or an idempotency error): the card may or may not have been
 * charged. Not a decline — nothing is paused and the payer is not told it failed — and no new
 * operation starts for the payer while it stands (it might be a second charge); the processor's
 * `payment_intent.succeeded` (credits it) or `payment_intent.payment_failed` (fails it) settles it.
 */
export const operationStatuses = ['pending', 'succeeded', 'failed', 'requires_action', 'unknown'] as const;
export type OperationStatus = (typeof operationStatuses)[number];

export interface OperationRow {
  id: string;
  payer_id: string;
  settings_version: number;
  status: OperationStatus;
  amount_nano: string | number;
  amount_cents: number;
  fee_cents: number;
  payment_intent_id: string | null;
  payment_id: string | number | null;
  user_id: number | null;
  failure_code: string | null;
  failure_message: string | null;
  attempts: number;
  /** What the operation charges, chosen when it was created: every retry sends the same request. */
  processor_customer_id: string | null;
  payment_method_id: string | null;
  /** The installation id its PaymentIntent carries in its metadata (null: created before migration 039, none). */
  install_id: string | null;
  created_at: Date;
  updated_at: Date;
}

/** Settings as the API shows them. */
export function presentSettings(row: AutoTopupRow | undefined, spentThisMonthNano: number) {
  if (!row)
    return {
      version: 0,
      enabled: false,
      threshold_usd: null,
      amount_usd: null,
      monthly_cap_usd: null,
      policy_version: autoTopupPolicyVersion,
      consented_at: null,
      paused_reason: null,
      charged_this_month_usd: 0,
    };
  // A value never stored (saved off without it) is 0 in the row and none here, as before the
  // first save: an amount and a cap are never 0 once set; a threshold of 0 with no amount was never set.
  const amount = Number(row.amount_nano);
  const cap = Number(row.monthly_cap_nano);
  const threshold = Number(row.threshold_nano);
  return {
    version: row.version,
    enabled: row.enabled,
    threshold_usd: threshold === 0 && amount === 0 ? null : nanoToUsd(threshold),
    amount_usd: amount === 0 ? null : nanoToUsd(amount),
    monthly_cap_usd: cap === 0 ? null : nanoToUsd(cap),
    policy_version: row.policy_version,
    consented_at: row.consented_at === null ? null : new Date(row.consented_at).toISOString(),
    paused_reason: row.paused_reason,
    charged_this_month_usd: nanoToUsd(spentThisMonthNano),
  };
}

/** An operation as the API shows it. */
export function presentOperation(row: OperationRow) {
  return {
    operation_id: row.id,
    status: row.status,
    // As on payments: wallet_usd is what the operation moved in the wallet (its credit once it
    // succeeded, else nothing), credit_usd what it credits once paid.
    wallet_usd: row.status === 'succeeded' ? nanoToUsd(Number(row.amount_nano)) : 0,
    credit_usd: nanoToUsd(Number(row.amount_nano)),
    amount_usd: centsToUsd(row.amount_cents),
    // The card charge under the name the checkout answer and the payments list give it.
    total_usd: centsToUsd(row.amount_cents),
    fee_usd: centsToUsd(row.fee_cents),
    settings_version: row.settings_version,
    payment_id: row.payment_id === null ? null : Number(row.payment_id),
    failure_code: row.failure_code,
    failure_message: row.failure_message,
    created: new Date(row.created_at).toISOString(),
    updated: new Date(row.updated_at).toISOString(),
  };
}

/** Wallet credit bought by operations this calendar month (UTC), pending ones included. */
export async function operationsThisMonthNano(knex: Knex, payerId: string, now: Date): Promise<number> {
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const row = (await knex('billing_auto_topup_operations')
    .where({ payer_id: payerId })
    .whereIn('status', ['pending', 'succeeded', 'unknown'])
    .andWhere('created_at', '>=', start)
    .sum({ total: 'amount_nano' })
    .first()) as { total: string | number | null } | undefined;
  return Number(row?.total ?? 0);
}

/** Why the processor refused an automatic charge. */
export interface ChargeFailure {
  code: string;
  message: string;
  paymentIntentId: string | null;
  /** Refused by the processor for a reason other than the card (nothing charged): not called a decline. */
  refused?: boolean;
}

/**
 * Records a refused automatic charge, once, whichever of its two reports comes first: the
 * operation ends `failed` (or `requires_action` when the cardholder must authenticate), a failed
 * payment joins the history, and the payer's automatic top-up pauses until its settings are
 * saved again — a declined card is never tried again in a loop. Nothing when already recorded.
 */
export async function recordOperationFailure(
  trx: Knex.Transaction,
  operationId: string,
  failure: ChargeFailure,
  now: Date,
): Promise<{ paymentId: number; followUps: FollowUp[] } | undefined> {
  const op = (await trx<OperationRow>('billing_auto_topup_operations').where({ id: operationId }).forUpdate().first()) as
    OperationRow | undefined;
  // An operation whose outcome was unknown is settled by the processor's word that it failed.
  if (!op || (op.status !== 'pending' && op.status !== 'unknown')) return undefined;
  const needsCardholder = failure.code === 'authentication_required';
  const [payment] = (await trx('billing_payments')
    .insert({
      payer_id: op.payer_id,
      user_id: op.user_id,
      kind: 'auto_topup',
      status: 'failed',
      credit_nano: op.amount_nano,
      amount_cents: op.amount_cents,
      fee_cents: op.fee_cents,
      payment_intent_id: failure.paymentIntentId,
      failure_code: failure.code.slice(0, 64),
      failure_message: failure.message.slice(0, 500),
      auto_topup_operation_id: op.id,
      install_id: op.install_id,
      created_at: now,
      updated_at: now,
      completed_at: now,
    })
    .returning('id')) as { id: string | number }[];
  await trx('billing_auto_topup_operations')
    .where({ id: op.id })
    .update({
      status: needsCardholder ? 'requires_action' : 'failed',
      payment_intent_id: failure.paymentIntentId,
      payment_id: payment!.id,
      failure_code: failure.code.slice(0, 64),
      failure_message: failure.message.slice(0, 500),
      updated_at: now,
    });
  await trx('billing_auto_topup')
    .where({ payer_id: op.payer_id })
    .update({ paused_reason: needsCardholder ? 'authentication_required' : 'payment_failed', updated_at: now });
  const followUps: FollowUp[] = [];
  const notified = op.user_id ?? payerUserId(op.payer_id);
  if (notified !== undefined) {
    const what = `The automatic top-up of ${formatCents(op.amount_cents)} for your wallet could not be charged: ${failure.message}`;
    followUps.push(
      { kind: 'activity', entry: { userId: notified, kind: 'payment_failed', summary: what, details: { operation_id: op.id } } },
      {
        kind: 'email',
        userId: notified,
        subject: needsCardholder
          ? 'Your automatic top-up needs your confirmation'
          : failure.refused
            ? 'Your automatic top-up could not be charged'
            : 'Your automatic top-up was declined',
        text:
          `${what}\n\nAutomatic top-up is paused and will not try again until you review your card and save ` +
          'the automatic top-up settings again. You can also add funds by hand on the billing page.',
        path: '/dashboard/billing',
      },
    );
  }
  return { paymentId: Number(payment!.id), followUps };
}

/**
 * Credits an operation the processor charged, once, whichever report comes first — the answer to
 * the charge, `payment_intent.succeeded`, or either after the operation was recorded `unknown`
 * or failed (a payment intent that succeeded took the money whatever was recorded before): the
 * ledger reference `auto_topup:<operation>` makes the credit once; the operation and its payment
 * row end `succeeded`, and a pause its failure caused is lifted. Undefined when already credited.
 */
export async function creditOperation(
  trx: Knex.Transaction,
  operationId: string,
  intent: { id: string; chargeId: string | null },
  now: Date,
): Promise<{ paymentId: number; entryIds: number[]; followUps: FollowUp[] } | undefined> {
  const op = (await trx<OperationRow>('billing_auto_topup_operations').where({ id: operationId }).forUpdate().first()) as
    OperationRow | undefined;
  if (!op || op.status === 'succeeded') return undefined;
  const paid = {
    status: 'succeeded',
    payment_intent_id: intent.id,
    charge_id: intent.chargeId,
    failure_code: null,
    failure_message: null,
    updated_at: now,
    completed_at: now,
  };
  let paymentId: number;
  if (op.payment_id !== null) {
    // A failure recorded before (after an answer that was not definite): its row is this payment.
    await trx('billing_payments').where({ id: op.payment_id }).update(paid);
    paymentId = Number(op.payment_id);
  } else {
    const [payment] = (await trx('billing_payments')
      .insert({
        payer_id: op.payer_id,
        user_id: op.user_id,
        kind: 'auto_topup',
        credit_nano: op.amount_nano,
        amount_cents: op.amount_cents,
        fee_cents: op.fee_cents,
        auto_topup_operation_id: op.id,
        install_id: op.install_id,
        created_at: now,
        ...paid,
      })
      .returning('id')) as { id: string | number }[];
    paymentId = Number(payment!.id);
  }
  const entryId = await postReferencedEntry(trx, {
    payerId: op.payer_id,
    amountNano: Number(op.amount_nano),
    reason: `automatic top-up ${op.id}`,
    reference: `auto_topup:${op.id}`,
    actor: 'auto_topup',
  });
  await trx('billing_auto_topup_operations').where({ id: op.id }).update({
    status: 'succeeded',
    payment_intent_id: intent.id,
    payment_id: paymentId,
    failure_code: null,
    failure_message: null,
    updated_at: now,
  });
  if (op.status === 'failed' || op.status === 'requires_action') {
    // Its failure paused automatic top-up; the charge went through after all.
    const latest = (await trx('billing_auto_topup_operations')
      .where({ payer_id: op.payer_id })
      .orderBy('created_at', 'desc')
      .first('id')) as { id: string } | undefined;
    if (latest?.id === op.id)
      await trx('billing_auto_topup')
        .where({ payer_id: op.payer_id })
        .whereIn('paused_reason', ['payment_failed', 'authentication_required'])
        .update({ paused_reason: null, updated_at: now });
  }
  if (entryId === undefined) return { paymentId, entryIds: [], followUps: [] };
  const notified = op.user_id ?? payerUserId(op.payer_id);
  const followUps: FollowUp[] =
    notified === undefined
      ? []
      : [
          {
            kind: 'activity',
            entry: {
              userId: notified,
              kind: 'payment_succeeded',
              summary: `Automatic top-up added ${formatCents(Math.round(Number(op.amount_nano) / centsToNano(1)))} to the wallet`,
              details: { operation_id: op.id },
            },
          },
          ...receiptFollowUp(op.user_id, op.payer_id, {
            paymentId,
            at: now,
            chargedCents: op.amount_cents,
            feeCents: op.fee_cents,
            creditNano: Number(op.amount_nano),
            automatic: true,
          }),
        ];
  return { paymentId, entryIds: [entryId], followUps };
}

/**
 * Records that a pending operation's charge has no definite outcome (see `unknown` above): no
 * pause, no failure mail — only an activity line saying the charge is not confirmed yet.
 */
export async function recordOperationUnknown(
  trx: Knex.Transaction,
  operationId: string,
  reason: { code: string; message: string },
  now: Date,
): Promise<FollowUp[] | undefined> {
  const op = (await trx<OperationRow>('billing_auto_topup_operations').where({ id: operationId }).forUpdate().first()) as
    OperationRow | undefined;
  if (!op || op.status !== 'pending') return undefined;
  await trx('billing_auto_topup_operations')
    .where({ id: op.id })
    .update({ status: 'unknown', failure_code: reason.code.slice(0, 64), failure_message: reason.message.slice(0, 500), updated_at: now });
  const notified = op.user_id ?? payerUserId(op.payer_id);
  return notified === undefined
    ? []
    : [
        {
          kind: 'activity',
          entry: {
            userId: notified,
            kind: 'auto_topup_changed',
            summary: `The automatic top-up of ${formatCents(op.amount_cents)} is not confirmed by the payment processor yet; it is credited if the processor reports the charge`,
            details: { operation_id: op.id },
          },
        },
      ];
}
