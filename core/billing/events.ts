// The processor's webhook events applied to the ledger (docs/billing.md "Events"). Each event id
// is recorded in `billing_processor_events` in the same transaction as the ledger change it
// causes: a redelivery — ten at once, or one days later — finds the id and changes nothing (on
// PostgreSQL the concurrent inserts wait on the primary key until the first commits). Unknown
// event types are recorded and acknowledged.
import type { Knex } from 'knex';
import { ApiError } from '../errors/index.js';
import { postReferencedEntry } from '../wallets/referenced-entries.js';
import { creditOperation, recordOperationFailure, type OperationRow } from './auto-topup-store.js';
import { receiptFollowUp } from './receipts.js';
import { activityFollowUp, type FollowUp } from './follow-ups.js';
import { centsToNano, currency, formatCents } from './money.js';
import { lockPayment, type PaymentRow } from './payments.js';

/** The part of an event the portal reads (the library's `Stripe.Event`, loosely). */
export interface ProcessorEventLike {
  id: string;
  type: string;
  data: { object: unknown };
}

export type EventOutcome =
  | 'credited'
  | 'reversed'
  | 'failure_recorded'
  | 'expired'
  | 'card_saved'
  | 'duplicate'
  | 'ignored'
  | 'unknown_payment'
  | 'mismatch'
  | 'held'
  | 'dispute_won'
  | 'dispute_lost'
  | 'refund_returned';

export interface EventResult {
  outcome: EventOutcome;
  paymentId?: number;
  /** Ledger entries posted (their mirror rows are in the outbox). */
  entryIds: number[];
  followUps: FollowUp[];
  detail?: string;
}

type Obj = Record<string, unknown>;
const str = (o: Obj, key: string): string | undefined => (typeof o[key] === 'string' ? (o[key] as string) : undefined);
const int = (o: Obj, key: string): number | undefined => (Number.isSafeInteger(o[key]) ? (o[key] as number) : undefined);
/** Our metadata: its text values only (the processor's are text; anything else names nothing). */
const metadata = (o: Obj): Record<string, string> =>
  o.metadata !== null && typeof o.metadata === 'object' && !Array.isArray(o.metadata)
    ? Object.fromEntries(Object.entries(o.metadata as Obj).filter((e): e is [string, string] => typeof e[1] === 'string'))
    : {};
/** An expandable reference: an id, or the expanded object's id. */
const ref = (o: Obj, key: string): string | undefined => {
  const value = o[key];
  if (typeof value === 'string') return value;
  if (value !== null && typeof value === 'object' && typeof (value as Obj).id === 'string') return (value as Obj).id as string;
  return undefined;
};

/**
 * Events about a charge of one of our payments that may carry none of our metadata (a dispute's
 * and a refund's `metadata` are their own, empty) and may arrive before the checkout's
 * completion told the portal which PaymentIntent its session made.
 */
/** The events that report a refund's later state (its object a refund): each may say it failed. */
const refundUpdateEventTypes = ['charge.refund.updated', 'refund.updated', 'refund.failed'];
const chargeEventTypes = new Set(['charge.refunded', 'charge.dispute.created', 'charge.dispute.closed', ...refundUpdateEventTypes]);

/** Reads a PaymentIntent's metadata at the processor: undefined when the processor has no such intent; throws when it cannot answer. */
export type IntentMetadataLookup = (paymentIntentId: string) => Promise<Record<string, string> | undefined>;

/**
 * A charge event that names a PaymentIntent the portal does not know yet and carries none of our
 * metadata: the PaymentIntent's own metadata (which Checkout copies from the session's
 * `payment_intent_data`, and an automatic charge carries) is read at the processor and used to
 * find the payment. An intent with none of ours is another integration's on the same account: the
 * event is then acknowledged as `unknown_payment` (one lookup, never retried). A lookup that fails
 * throws, before anything is recorded: the webhook answers 503 and the processor redelivers.
 */
async function withIntentMetadata(
  knex: Knex,
  event: ProcessorEventLike,
  lookup: IntentMetadataLookup | undefined,
): Promise<ProcessorEventLike> {
  const object = event.data?.object;
  if (!lookup || !chargeEventTypes.has(event.type) || object === null || typeof object !== 'object' || Array.isArray(object)) return event;
  const meta = metadata(object as Obj);
  const intentId = ref(object as Obj, 'payment_intent');
  if (meta.payment_id || meta.operation_id || !intentId) return event;
  if (await knex('billing_payments').where({ payment_intent_id: intentId }).first('id')) return event;
  const found = await lookup(intentId);
  if (!found?.payment_id) return event;
  // The intent's installation id goes with its payment id (or its absence does): an intent of
  // another deployment on the account names a payment id of ours by chance, and is told apart by it.
  const { install_id: _own, ...rest } = meta;
  const names = {
    payment_id: found.payment_id,
    payer_id: found.payer_id,
    ...(found.install_id !== undefined && { install_id: found.install_id }),
  };
  return { ...event, data: { ...event.data, object: { ...(object as Obj), metadata: { ...rest, ...names } } } };
}

/** Applies one verified event in one transaction; a repeated event id is `duplicate`. */
export async function applyProcessorEvent(
  knex: Knex,
  event: ProcessorEventLike,
  now: Date,
  lookup?: IntentMetadataLookup,
): Promise<EventResult> {
  // A signed event of another shape (not an object — `null`, an array, a number —, no id, a type
  // that is not text) is acknowledged and left: it cannot be told apart from its redeliveries, so
  // nothing is changed by it.
  if (event === null || typeof event !== 'object' || Array.isArray(event))
    return { outcome: 'ignored', entryIds: [], followUps: [], detail: 'event that is not an object' };
  const eventId = typeof event.id === 'string' || Number.isSafeInteger(event.id) ? String(event.id).slice(0, 255) : '';
  if (eventId === '' || typeof event.type !== 'string')
    return { outcome: 'ignored', entryIds: [], followUps: [], detail: 'event without a text id and type' };
  if (!(await knex('billing_processor_events').where({ event_id: eventId }).first('event_id')))
    event = await withIntentMetadata(knex, event, lookup);
  return knex.transaction(async (trx) => {
    const inserted = (await trx('billing_processor_events')
      .insert({ event_id: eventId, type: event.type.slice(0, 100), outcome: 'processing', processed_at: now })
      .onConflict('event_id')
      .ignore()
      .returning('event_id')) as unknown[];
    if (inserted.length === 0) return { outcome: 'duplicate', entryIds: [], followUps: [] };
    const object = event.data?.object;
    const foreign = object !== null && typeof object === 'object' ? await otherInstallation(trx, metadata(object as Obj)) : undefined;
    const result: EventResult =
      object === null || typeof object !== 'object'
        ? { outcome: 'ignored', entryIds: [], followUps: [], detail: 'event without an object' }
        : foreign !== undefined
          ? { outcome: 'unknown_payment', entryIds: [], followUps: [], detail: `another deployment's (installation ${foreign})` }
          : await dispatch(trx, event.type, object as Obj, now);
    await trx('billing_processor_events')
      .where({ event_id: eventId })
      .update({ outcome: result.outcome, payment_id: result.paymentId ?? null, detail: result.detail?.slice(0, 500) ?? null });
    return result;
  });
}

/** This database's installation id (customers.ts installId), undefined while none was made: then no payment carries one. */
async function ourInstallation(trx: Knex.Transaction): Promise<string | undefined> {
  return ((await trx('billing_installation').first('install_id')) as { install_id: string } | undefined)?.install_id;
}

/**
 * The installation id an object's metadata carries when it is not ours: the object (a session, a
 * PaymentIntent — or a charge event given its PaymentIntent's metadata) was made by another
 * deployment on the same processor account, which sends every event to every endpoint. Nothing of
 * ours is changed by it, whatever payment id it names (docs/billing.md "Deployments sharing a
 * processor account").
 */
async function otherInstallation(trx: Knex.Transaction, meta: Record<string, string>): Promise<string | undefined> {
  if (meta.install_id === undefined) return undefined;
  return meta.install_id === (await ourInstallation(trx)) ? undefined : meta.install_id.slice(0, 64);
}

function dispatch(trx: Knex.Transaction, type: string, object: Obj, now: Date): Promise<EventResult> {
  switch (type) {
    case 'checkout.session.completed':
      return str(object, 'mode') === 'setup' ? setupCompleted(trx, object, now) : checkoutCompleted(trx, object, now);
    // A delayed ("async") payment method: the completion said `unpaid`; this says it was paid.
    // Credited exactly as a paid completion (the reference `checkout:<session>` makes it once,
    // whichever of the two arrives, in any order, however often).
    case 'checkout.session.async_payment_succeeded':
      return checkoutCompleted(trx, object, now);
    case 'checkout.session.async_payment_failed':
      return checkoutAsyncFailed(trx, object, now);
    case 'checkout.session.expired':
      return checkoutExpired(trx, object, now);
    case 'charge.refunded':
      return chargeRefunded(trx, object, now);
    // A refund the bank could not pay (the card closed, say): the processor reports it with any of
    // these, each delivered when subscribed; the refund's id makes it once.
    case 'charge.refund.updated':
    case 'refund.updated':
    case 'refund.failed':
      return refundUpdated(trx, object, now);
    case 'payment_intent.payment_failed':
      return paymentFailed(trx, object, now);
    case 'payment_intent.succeeded':
      return paymentSucceeded(trx, object, now);
    case 'charge.dispute.created':
      return disputeCreated(trx, object, now);
    case 'charge.dispute.closed':
      return disputeClosed(trx, object, now);
    default:
      return Promise.resolve({ outcome: 'ignored', entryIds: [], followUps: [], detail: `event type ${type} is not used` });
  }
}

/**
 * The payment a processor object belongs to: by the ids the processor gave us (its session or
 * PaymentIntent, else — for a charge event — the charge recorded on a top-up), else by our
 * metadata. Metadata names a payment by its row id, which another deployment on the same account
 * (or this one before a database reset) has too: it must carry the installation id the payment
 * recorded when its session or intent was made — or, for a payment made before installation ids
 * were recorded (`install_id` null), none, as then (docs/billing.md).
 */
async function findPayment(
  trx: Knex.Transaction,
  byColumn: Partial<Pick<PaymentRow, 'checkout_session_id' | 'payment_intent_id'>>,
  meta: Record<string, string>,
  chargeId?: string,
): Promise<PaymentRow | undefined> {
  const direct = Object.values(byColumn).some((v) => v !== undefined) ? await lockPayment(trx, byColumn) : undefined;
  if (direct) return direct;
  if (chargeId) {
    const byCharge = (await trx<PaymentRow>('billing_payments')
      .where({ charge_id: chargeId.slice(0, 255) })
      .whereIn('kind', ['checkout', 'auto_topup'])
      .forUpdate()
      .first()) as PaymentRow | undefined;
    if (byCharge) return byCharge;
  }
  const id = meta.payment_id;
  if (!id || !/^[1-9][0-9]{0,15}$/.test(id)) return undefined;
  const row = await lockPayment(trx, { id });
  // The metadata must agree with the row, or it is not our payment.
  if (!row || row.payer_id !== meta.payer_id) return undefined;
  if ((row.install_id ?? undefined) !== meta.install_id) return undefined;
  // Found by metadata before the portal knew its PaymentIntent: remember it, so the charge's later
  // events find the payment by it.
  const intentId = byColumn.payment_intent_id;
  if (intentId && row.payment_intent_id === null && (row.kind === 'checkout' || row.kind === 'auto_topup')) {
    await trx('billing_payments').where({ id: row.id }).update({ payment_intent_id: intentId });
    return { ...row, payment_intent_id: intentId };
  }
  return row;
}

/** The states of a checkout payment not credited yet: a completion of its session credits it. */
const creditablePaymentStatuses = new Set(['pending', 'failed', 'expired']);

/** checkout.session.completed, payment mode: the wallet is credited what the payer bought. */
async function checkoutCompleted(trx: Knex.Transaction, session: Obj, now: Date): Promise<EventResult> {
  const sessionId = str(session, 'id');
  if (!sessionId) return { outcome: 'ignored', entryIds: [], followUps: [], detail: 'session without an id' };
  if (str(session, 'payment_status') !== 'paid')
    return { outcome: 'ignored', entryIds: [], followUps: [], detail: `payment_status ${str(session, 'payment_status')}: not paid yet` };
  const payment = await findPayment(trx, { checkout_session_id: sessionId }, metadata(session));
  if (!payment || payment.kind !== 'checkout')
    return { outcome: 'unknown_payment', entryIds: [], followUps: [], detail: `no checkout payment for session ${sessionId}` };
  const paymentId = Number(payment.id);
  // A payment is paid through the session it was opened with: another session carrying its
  // metadata (copied, or replayed from another deployment) is not it — and one already credited
  // is never credited again, whichever session or event says so.
  if (payment.checkout_session_id !== null && payment.checkout_session_id !== sessionId)
    return {
      outcome: 'mismatch',
      paymentId,
      entryIds: [],
      followUps: [],
      detail: `session ${sessionId} names payment ${paymentId}, which was opened as session ${payment.checkout_session_id}`,
    };
  if (!creditablePaymentStatuses.has(payment.status))
    return { outcome: 'duplicate', paymentId, entryIds: [], followUps: [], detail: `payment is ${payment.status}: already credited` };
  const total = int(session, 'amount_total');
  if (total !== payment.amount_cents || str(session, 'currency') !== currency || metadata(session).payer_id !== payment.payer_id)
    return {
      outcome: 'mismatch',
      paymentId,
      entryIds: [],
      followUps: [],
      detail: `session ${sessionId} says ${total} ${str(session, 'currency')} for ${metadata(session).payer_id}, payment ${paymentId} expects ${payment.amount_cents} ${currency} for ${payment.payer_id}`,
    };
  const entryId = await creditCheckout(trx, payment, sessionId, ref(session, 'payment_intent') ?? null, now);
  if (entryId === undefined) return { outcome: 'duplicate', paymentId, entryIds: [], followUps: [], detail: 'already credited' };
  return { outcome: 'credited', paymentId, entryIds: [entryId], followUps: checkoutCreditedFollowUps(payment, now) };
}

/** What a checkout payment's credit is followed by, whichever event credited it: an activity line and the receipt. */
function checkoutCreditedFollowUps(payment: PaymentRow, now: Date): FollowUp[] {
  const paymentId = Number(payment.id);
  const creditNano = Number(payment.credit_nano);
  return [
    ...activityFollowUp(payment.user_id, {
      kind: 'payment_succeeded',
      summary: `Added ${formatCents(creditNano / centsToNano(1))} to the wallet (card charged ${formatCents(payment.amount_cents)})`,
      details: { payment_id: paymentId, payer: payment.payer_id },
    }),
    ...receiptFollowUp(payment.user_id, payment.payer_id, {
      paymentId,
      at: now,
      chargedCents: payment.amount_cents,
      feeCents: payment.fee_cents,
      creditNano,
      automatic: false,
    }),
  ];
}

/**
 * checkout.session.expired: the hosted page can no longer be paid (left unpaid until it timed
 * out, or cancelled by its user). A payment still pending is `expired`, so the history does not
 * show it as money in flight; nothing is credited or reversed. Should a completion of the same
 * session ever follow, it still credits (checkoutCompleted accepts an expired payment).
 */
async function checkoutExpired(trx: Knex.Transaction, session: Obj, now: Date): Promise<EventResult> {
  const sessionId = str(session, 'id');
  if (!sessionId) return { outcome: 'ignored', entryIds: [], followUps: [], detail: 'session without an id' };
  await expireCheckoutSession(trx, sessionId);
  if (str(session, 'mode') === 'setup') return { outcome: 'expired', entryIds: [], followUps: [], detail: 'card saving not finished' };
  const payment = await findPayment(trx, { checkout_session_id: sessionId }, metadata(session));
  if (!payment || payment.kind !== 'checkout')
    return { outcome: 'unknown_payment', entryIds: [], followUps: [], detail: `no checkout payment for session ${sessionId}` };
  const paymentId = Number(payment.id);
  // A payment whose card was declined (`failed`) could still be paid on its page until now: once
  // the session expired it is over, and `expired` says so (the decline's reason is kept).
  if (payment.status !== 'pending' && payment.status !== 'failed')
    return { outcome: 'ignored', paymentId, entryIds: [], followUps: [], detail: `payment is ${payment.status}` };
  await trx('billing_payments')
    .where({ id: paymentId, kind: 'checkout' })
    .whereIn('status', ['pending', 'failed'])
    .update({ status: 'expired', updated_at: now });
  return { outcome: 'expired', paymentId, entryIds: [], followUps: [] };
}

/**
 * checkout.session.async_payment_failed: the delayed payment of a completed session failed. The
 * payment is marked failed and its user told, as for payment_intent.payment_failed; nothing is
 * credited (a payment already credited is left as it is).
 */
async function checkoutAsyncFailed(trx: Knex.Transaction, session: Obj, now: Date): Promise<EventResult> {
  const sessionId = str(session, 'id');
  if (!sessionId) return { outcome: 'ignored', entryIds: [], followUps: [], detail: 'session without an id' };
  const payment = await findPayment(trx, { checkout_session_id: sessionId }, metadata(session));
  if (!payment || payment.kind !== 'checkout')
    return { outcome: 'unknown_payment', entryIds: [], followUps: [], detail: `no checkout payment for session ${sessionId}` };
  if (payment.checkout_session_id !== null && payment.checkout_session_id !== sessionId)
    return {
      outcome: 'mismatch',
      paymentId: Number(payment.id),
      entryIds: [],
      followUps: [],
      detail: `session ${sessionId} is not payment ${String(payment.id)}'s`,
    };
  return markPaymentFailed(
    trx,
    payment,
    ref(session, 'payment_intent') ?? '',
    {
      code: 'async_payment_failed',
      message: 'The delayed payment did not go through',
    },
    now,
  );
}

/** Marks a hosted checkout session that is still open as expired (the confirmation page then says so). */
export async function expireCheckoutSession(knex: Knex | Knex.Transaction, sessionId: string): Promise<void> {
  await knex('billing_checkout_sessions').where({ session_id: sessionId, status: 'open' }).update({ status: 'expired' });
}

/** Marks a checkout payment that is still pending as expired (never one the processor has settled). */
export async function expirePendingPayment(knex: Knex | Knex.Transaction, paymentId: number, now: Date): Promise<boolean> {
  const changed = await knex('billing_payments')
    .where({ id: paymentId, kind: 'checkout', status: 'pending' })
    .update({ status: 'expired', updated_at: now });
  return changed > 0;
}

/** checkout.session.completed, setup mode: a card was saved for the payer. */
async function setupCompleted(trx: Knex.Transaction, session: Obj, now: Date): Promise<EventResult> {
  const sessionId = str(session, 'id') ?? '';
  const row = (await trx('billing_checkout_sessions').where({ session_id: sessionId, mode: 'setup' }).forUpdate().first()) as
    { payer_id: string; user_id: number; status: string } | undefined;
  if (!row) return { outcome: 'unknown_payment', entryIds: [], followUps: [], detail: `no setup session ${sessionId}` };
  await trx('billing_checkout_sessions').where({ session_id: sessionId }).update({ status: 'complete', completed_at: now });
  const setupIntentId = ref(session, 'setup_intent');
  const followUps: FollowUp[] = [
    { kind: 'activity', entry: { userId: row.user_id, kind: 'payment_method_saved', summary: 'Saved a card for payments' } },
  ];
  if (setupIntentId) followUps.push({ kind: 'card_saved', payerId: row.payer_id, setupIntentId });
  return { outcome: 'card_saved', entryIds: [], followUps };
}

/** A payment as it stands after creditedFirst, with the credit's entry and follow-ups when it made one. */
interface CreditedFirst {
  payment: PaymentRow;
  entryIds: number[];
  followUps: FollowUp[];
}

/**
 * A refund or a dispute proves its charge was paid, and may arrive before the checkout's
 * completion (events are not ordered): the payment is credited first, under the completion's own
 * reference, so the reversal takes back only what was credited and the completion, when it comes,
 * is the duplicate it now is — so the credit's receipt and activity line go out here, as the
 * completion would have sent them (outside probe: none was sent).
 */
async function creditedFirst(trx: Knex.Transaction, payment: PaymentRow, now: Date): Promise<CreditedFirst> {
  if (payment.kind !== 'checkout' || !creditablePaymentStatuses.has(payment.status) || payment.checkout_session_id === null)
    return { payment, entryIds: [], followUps: [] };
  const entryId = await creditCheckout(trx, payment, payment.checkout_session_id, null, now);
  const credited: PaymentRow = { ...payment, status: 'succeeded' };
  if (entryId === undefined) return { payment: credited, entryIds: [], followUps: [] };
  return { payment: credited, entryIds: [entryId], followUps: checkoutCreditedFollowUps(payment, now) };
}

/**
 * Credits a checkout payment through its session and marks both done: the one place a top-up
 * reaches the wallet, whichever event proves it paid. The reference `checkout:<session>` makes it
 * once: undefined when it was credited already.
 */
async function creditCheckout(
  trx: Knex.Transaction,
  payment: PaymentRow,
  sessionId: string,
  intentId: string | null,
  now: Date,
): Promise<number | undefined> {
  const entryId = await postReferencedEntry(trx, {
    payerId: payment.payer_id,
    amountNano: Number(payment.credit_nano),
    reason: `card top-up (payment ${String(payment.id)})`,
    reference: `checkout:${sessionId}`,
    actor: payment.user_id === null ? 'processor' : `user:${payment.user_id}`,
  });
  await trx('billing_payments')
    .where({ id: payment.id })
    .update({
      status: 'succeeded',
      checkout_session_id: sessionId,
      payment_intent_id: payment.payment_intent_id ?? intentId,
      failure_code: null,
      failure_message: null,
      completed_at: now,
      updated_at: now,
    });
  await trx('billing_checkout_sessions').where({ session_id: sessionId }).update({ status: 'complete', completed_at: now });
  return entryId;
}

/**
 * charge.refunded: the charge reports its cumulative `amount_refunded`; the part not yet
 * reversed is taken from the wallet (a partial refund reverses that many dollars, the last
 * refund whatever is left of the credit — the fee is not credited, so never reversed).
 * Out-of-order deliveries with a smaller cumulative amount change nothing.
 */
async function chargeRefunded(trx: Knex.Transaction, charge: Obj, now: Date): Promise<EventResult> {
  const chargeId = str(charge, 'id') ?? '';
  const intentId = ref(charge, 'payment_intent');
  const found = await findPayment(trx, { payment_intent_id: intentId }, metadata(charge), chargeId || undefined);
  if (!found || found.kind === 'refund' || found.kind === 'dispute')
    return { outcome: 'unknown_payment', entryIds: [], followUps: [], detail: `no payment for charge ${chargeId}` };
  // A charge of another amount, or refunded past the payment's, is not this payment's: nothing is
  // credited or taken by it (one already credited keeps refunds bounded to it, below).
  const chargeAmount = int(charge, 'amount');
  const refundedCents = int(charge, 'amount_refunded') ?? 0;
  if ((chargeAmount !== undefined && chargeAmount !== found.amount_cents) || (refundedCents > found.amount_cents && notCreditedYet(found)))
    return {
      outcome: 'mismatch',
      paymentId: Number(found.id),
      entryIds: [],
      followUps: [],
      detail: `charge ${chargeId} of ${String(charge.amount)} cents, ${String(charge.amount_refunded)} refunded, names payment ${String(found.id)} of ${found.amount_cents}`,
    };
  const first = await creditedFirst(trx, found, now);
  const { payment } = first;
  const paymentId = Number(payment.id);
  // Never more than was paid, whatever the event says (a refund cannot exceed its charge).
  const cumulative = Math.min(Math.max(int(charge, 'amount_refunded') ?? 0, 0), payment.amount_cents);
  const newlyRefunded = cumulative - payment.refunded_cents;
  if (newlyRefunded <= 0)
    return { outcome: 'ignored', paymentId, ...afterCredit(first, []), detail: `refunds up to ${cumulative} cents already applied` };
  const credited = Number(payment.credit_nano);
  const left = credited - Number(payment.reversed_nano);
  const reversal = cumulative >= payment.amount_cents ? left : Math.min(centsToNano(newlyRefunded), left);
  // After a refund failed, the charge's cumulative amount comes down and a later refund can bring
  // it back to a figure an earlier reversal's reference already holds: the failed cents, added,
  // keep every reference new (the sum only grows, one refund at a time).
  const failedCents = await failedRefundCents(trx, payment);
  const entryId =
    reversal > 0
      ? await postReferencedEntry(trx, {
          payerId: payment.payer_id,
          amountNano: -reversal,
          reason: `refund of payment ${paymentId}`,
          reference: failedCents > 0 ? `refund:${chargeId}:${cumulative}+${failedCents}` : `refund:${chargeId}:${cumulative}`,
          actor: 'processor',
        })
      : undefined;
  await insertRefundRow(trx, payment, now, {
    status: 'succeeded',
    credit_nano: -reversal,
    amount_cents: newlyRefunded,
    charge_id: chargeId.slice(0, 255),
  });
  await trx('billing_payments')
    .where({ id: payment.id })
    .update({
      status: cumulative >= payment.amount_cents ? 'refunded' : 'partially_refunded',
      refunded_cents: cumulative,
      reversed_nano: Number(payment.reversed_nano) + reversal,
      charge_id: payment.charge_id ?? chargeId.slice(0, 255),
      updated_at: now,
    });
  const followUps = activityFollowUp(payment.user_id, {
    kind: 'payment_refunded',
    summary: `Refunded ${formatCents(newlyRefunded)} of payment ${paymentId}; ${formatCents(Math.round(reversal / centsToNano(1)))} taken back from the wallet`,
    details: { payment_id: paymentId },
  });
  return { outcome: 'reversed', paymentId, ...afterCredit(first, followUps, entryId) };
}

/** The refund statuses that mean the card got nothing back: what the refund took returns to the wallet. */
const unpaidRefundStatuses = new Set(['failed', 'canceled']);

/**
 * A refund reported failed or canceled (charge.refund.updated, refund.updated, refund.failed): the
 * bank could not pay it, so the charge's refunded amount comes down by the refund's and the wallet
 * gets back what that refund had taken — the reversal the payment's other refunds alone are due
 * (all of the credit once refunded in full, else their dollars) is what stays taken. Once per
 * refund id, whichever of the three events arrives and however often. A failure delivered before
 * the refund's own `charge.refunded` cannot be told from one already applied: it is answered 503,
 * so the processor delivers it again later. Other refund states change nothing.
 */
async function refundUpdated(trx: Knex.Transaction, refund: Obj, now: Date): Promise<EventResult> {
  const refundId = str(refund, 'id')?.slice(0, 255);
  const status = str(refund, 'status') ?? '';
  if (!refundId) return { outcome: 'ignored', entryIds: [], followUps: [], detail: 'refund without an id' };
  if (!unpaidRefundStatuses.has(status))
    return {
      outcome: 'ignored',
      entryIds: [],
      followUps: [],
      detail: `refund ${refundId} is ${status.slice(0, 40) || 'without a status'}`,
    };
  const chargeId = ref(refund, 'charge');
  const found = await findPayment(trx, { payment_intent_id: ref(refund, 'payment_intent') }, metadata(refund), chargeId);
  if (!found || (found.kind !== 'checkout' && found.kind !== 'auto_topup'))
    return { outcome: 'unknown_payment', entryIds: [], followUps: [], detail: `no payment for refund ${refundId}` };
  const paymentId = Number(found.id);
  if (await trx('billing_payments').where({ refund_id: refundId }).first('id'))
    return { outcome: 'ignored', paymentId, entryIds: [], followUps: [], detail: `refund ${refundId} already returned` };
  const amount = int(refund, 'amount');
  if (amount === undefined || amount <= 0)
    return {
      outcome: 'mismatch',
      paymentId,
      entryIds: [],
      followUps: [],
      detail: `refund ${refundId} is for ${String(refund.amount)} cents`,
    };
  if (amount > found.refunded_cents)
    throw new ApiError('billing_unavailable', {
      humanMessage: `Refund ${refundId} of payment ${paymentId} is reported ${status} before the refund itself reached the portal; deliver this event again later`,
      retryAfterSeconds: 60,
    });
  const remaining = found.refunded_cents - amount;
  // What the remaining refunds are due stays taken; the rest of what refunds took comes back.
  const returned = Math.max(0, (await refundsTaken(trx, found)) - refundsDue(found, remaining));
  const entryId =
    returned > 0
      ? await postReferencedEntry(trx, {
          payerId: found.payer_id,
          amountNano: returned,
          reason: `refund ${refundId} of payment ${paymentId} ${status} at the bank: returned to the wallet`,
          reference: `refund_returned:${refundId}`,
          actor: 'processor',
        })
      : undefined;
  const reason = str(refund, 'failure_reason');
  await insertRefundRow(trx, found, now, {
    status: 'returned',
    credit_nano: returned,
    amount_cents: amount,
    charge_id: (chargeId ?? found.charge_id ?? '').slice(0, 255) || null,
    refund_id: refundId,
    failure_code: reason?.slice(0, 100) ?? status,
    failure_message: `The bank could not pay this refund (${(reason ?? status).slice(0, 100)}); what it took is back in the wallet`,
  });
  await trx('billing_payments')
    .where({ id: found.id })
    .update({
      refunded_cents: remaining,
      reversed_nano: Number(found.reversed_nano) - returned,
      // A payment under dispute stays so; otherwise its status follows what stays refunded.
      status: found.status === 'disputed' ? 'disputed' : statusAfterRefunds(found, remaining),
      updated_at: now,
    });
  const followUps = activityFollowUp(found.user_id, {
    kind: 'payment_refunded',
    summary: `A refund of ${formatCents(amount)} of payment ${paymentId} ${status} at the bank; ${formatCents(Math.round(returned / centsToNano(1)))} is back in the wallet`,
    details: { payment_id: paymentId },
  });
  return { outcome: 'refund_returned', paymentId, entryIds: entryId === undefined ? [] : [entryId], followUps };
}

/** A paid top-up's status once `refundedCents` of it stand refunded. */
function statusAfterRefunds(payment: PaymentRow, refundedCents: number): PaymentRow['status'] {
  return refundedCents >= payment.amount_cents ? 'refunded' : refundedCents > 0 ? 'partially_refunded' : 'succeeded';
}

/** A `refund` row of `payment` in the history: one applied refund, or a refund the bank could not pay (`returned`). */
async function insertRefundRow(
  trx: Knex.Transaction,
  payment: PaymentRow,
  now: Date,
  row: Pick<PaymentRow, 'credit_nano' | 'amount_cents' | 'charge_id'> & { status: 'succeeded' | 'returned' } & Partial<
      Pick<PaymentRow, 'refund_id' | 'failure_code' | 'failure_message'>
    >,
): Promise<void> {
  await trx('billing_payments').insert({
    payer_id: payment.payer_id,
    user_id: payment.user_id,
    kind: 'refund',
    fee_cents: 0,
    original_payment_id: payment.id,
    created_at: now,
    updated_at: now,
    completed_at: now,
    ...row,
  });
}

/**
 * What refunds of `refundedCents` are due from a payment's credit (nano-USD): all of it once they
 * cover the charge (the fee was never credited), else their dollars, never more than the credit.
 */
function refundsDue(payment: PaymentRow, refundedCents: number): number {
  const credited = Number(payment.credit_nano);
  return refundedCents >= payment.amount_cents ? credited : Math.min(centsToNano(refundedCents), credited);
}

/** What a payment's refund rows have taken from the wallet, net of what failed refunds gave back (nano-USD, ≥ 0). */
async function refundsTaken(trx: Knex.Transaction, payment: PaymentRow): Promise<number> {
  const [sum] = (await trx('billing_payments').where({ kind: 'refund', original_payment_id: payment.id }).sum({ nano: 'credit_nano' })) as {
    nano: string | number | null;
  }[];
  return Math.max(0, -Number(sum?.nano ?? 0));
}

/** The cents of a payment's refunds that failed after they were applied (its `returned` refund rows). */
async function failedRefundCents(trx: Knex.Transaction, payment: PaymentRow): Promise<number> {
  const [sum] = (await trx('billing_payments')
    .where({ kind: 'refund', status: 'returned', original_payment_id: payment.id })
    .sum({ cents: 'amount_cents' })) as { cents: string | number | null }[];
  return Number(sum?.cents ?? 0);
}

/**
 * payment_intent.succeeded: an automatic top-up's charge went through. Its operation (by our
 * metadata, else by the intent id recorded on it) is credited once — under `auto_topup:<operation>`,
 * the reference the answer to the charge uses, so never twice — and marked succeeded whatever was
 * recorded before (pending after `processing`, `unknown` after no definite answer, failed). A
 * checkout's intent is credited by its session's events: ignored here.
 */
async function paymentSucceeded(trx: Knex.Transaction, intent: Obj, now: Date): Promise<EventResult> {
  const intentId = str(intent, 'id') ?? '';
  const meta = metadata(intent);
  const op = (
    meta.operation_id
      ? await trx('billing_auto_topup_operations')
          .where({ id: meta.operation_id.slice(0, 40) })
          .first()
      : intentId
        ? await trx('billing_auto_topup_operations').where({ payment_intent_id: intentId }).first()
        : undefined
  ) as OperationRow | undefined;
  if (!op) return { outcome: 'ignored', entryIds: [], followUps: [], detail: `intent ${intentId} is no automatic top-up` };
  const amount = int(intent, 'amount_received') ?? int(intent, 'amount');
  if ((meta.payer_id !== undefined && meta.payer_id !== op.payer_id) || amount !== op.amount_cents || str(intent, 'currency') !== currency)
    return {
      outcome: 'mismatch',
      entryIds: [],
      followUps: [],
      detail: `intent ${intentId} says ${amount} ${str(intent, 'currency')} for ${meta.payer_id}, operation ${op.id} is ${op.amount_cents} ${currency} for ${op.payer_id}`,
    };
  const credited = await creditOperation(trx, op.id, { id: intentId, chargeId: ref(intent, 'latest_charge') ?? null }, now);
  if (!credited) return { outcome: 'duplicate', entryIds: [], followUps: [], detail: `operation ${op.id} already succeeded` };
  return {
    outcome: credited.entryIds.length > 0 ? 'credited' : 'duplicate',
    paymentId: credited.paymentId,
    entryIds: credited.entryIds,
    followUps: credited.followUps,
  };
}

/**
 * payment_intent.payment_failed: the payment is marked failed with the processor's reason and its
 * user is told. A checkout whose card was declined stays open at the processor: a later success
 * on the same session still credits. An automatic top-up's operation fails and pauses.
 */
async function paymentFailed(trx: Knex.Transaction, intent: Obj, now: Date): Promise<EventResult> {
  const intentId = str(intent, 'id') ?? '';
  const error = (intent.last_payment_error ?? {}) as Obj;
  const code = str(error, 'decline_code') ?? str(error, 'code') ?? 'payment_failed';
  const message = str(error, 'message') ?? 'The payment was not completed';
  const meta = metadata(intent);
  if (meta.operation_id) {
    const recorded = await recordOperationFailure(trx, meta.operation_id, { code, message, paymentIntentId: intentId || null }, now);
    if (recorded) return { outcome: 'failure_recorded', paymentId: recorded.paymentId, entryIds: [], followUps: recorded.followUps };
    return { outcome: 'ignored', entryIds: [], followUps: [], detail: `operation ${meta.operation_id} is not pending` };
  }
  const payment = await findPayment(trx, { payment_intent_id: intentId }, meta);
  if (!payment) return { outcome: 'unknown_payment', entryIds: [], followUps: [], detail: `no payment for intent ${intentId}` };
  return markPaymentFailed(trx, payment, intentId, { code, message }, now);
}

/** A checkout payment not paid: marked failed with the processor's reason, its user told (once it was credited: left). */
async function markPaymentFailed(
  trx: Knex.Transaction,
  payment: PaymentRow,
  intentId: string,
  { code, message }: { code: string; message: string },
  now: Date,
): Promise<EventResult> {
  const paymentId = Number(payment.id);
  if (payment.status !== 'pending' && payment.status !== 'failed')
    return { outcome: 'ignored', paymentId, entryIds: [], followUps: [], detail: `payment is ${payment.status}` };
  await trx('billing_payments')
    .where({ id: payment.id })
    .update({
      status: 'failed',
      payment_intent_id: payment.payment_intent_id ?? (intentId || null),
      failure_code: code.slice(0, 64),
      failure_message: message.slice(0, 500),
      updated_at: now,
    });
  const followUps: FollowUp[] = [];
  if (payment.user_id !== null) {
    const what = `Your card payment of ${formatCents(payment.amount_cents)} failed: ${message}`;
    followUps.push(
      { kind: 'activity', entry: { userId: payment.user_id, kind: 'payment_failed', summary: what, details: { payment_id: paymentId } } },
      {
        kind: 'email',
        userId: payment.user_id,
        subject: 'Your payment failed',
        text: `${what}\n\nNothing was added to your wallet. You can try again with another card from the billing page.`,
        path: '/dashboard/billing',
      },
    );
  }
  return { outcome: 'failure_recorded', paymentId, entryIds: [], followUps };
}

/**
 * charge.dispute.created: the disputed part of the credit is held back from the wallet while the
 * dispute is open (at most what is left of the credit after refunds; the fee was never credited).
 */
async function disputeCreated(trx: Knex.Transaction, dispute: Obj, now: Date): Promise<EventResult> {
  const disputeId = str(dispute, 'id');
  if (!disputeId) return { outcome: 'ignored', entryIds: [], followUps: [], detail: 'dispute without an id' };
  const found = await findPayment(trx, { payment_intent_id: ref(dispute, 'payment_intent') }, metadata(dispute), ref(dispute, 'charge'));
  if (!found || (found.kind !== 'checkout' && found.kind !== 'auto_topup'))
    return { outcome: 'unknown_payment', entryIds: [], followUps: [], detail: `no payment for dispute ${disputeId}` };
  // Held, or already closed (a close delivered first applied its outcome): once per dispute.
  if (await trx('billing_payments').where({ dispute_id: disputeId }).first('id'))
    return { outcome: 'ignored', paymentId: Number(found.id), entryIds: [], followUps: [], detail: `dispute ${disputeId} already applied` };
  const paymentId = Number(found.id);
  const amountCents = disputedCents(dispute, found);
  if (amountCents === undefined)
    return {
      outcome: 'mismatch',
      paymentId,
      entryIds: [],
      followUps: [],
      detail: `dispute ${disputeId} is for ${String(dispute.amount)} cents`,
    };
  const first = await creditedFirst(trx, found, now);
  const { payment } = first;
  const { taken: held, entryId } = await takeForDispute(trx, payment, dispute, now, {
    disputeId,
    amountCents,
    take: true,
    status: 'open',
    reason: `payment ${paymentId} disputed (held while the dispute is open)`,
  });
  const followUps = activityFollowUp(payment.user_id, {
    kind: 'payment_refunded',
    summary: `Payment ${paymentId} is disputed at the card issuer; ${formatCents(Math.round(held / centsToNano(1)))} is held back from the wallet until it is decided`,
    details: { payment_id: paymentId, dispute_id: disputeId },
  });
  return { outcome: 'held', paymentId, ...afterCredit(first, followUps, entryId) };
}

/**
 * charge.dispute.closed: won, what was held goes back to the wallet; lost (or anything else), it
 * stays reversed. Applied once per dispute, whatever is redelivered.
 */
async function disputeClosed(trx: Knex.Transaction, dispute: Obj, now: Date): Promise<EventResult> {
  const disputeId = str(dispute, 'id') ?? '';
  const row = (await trx('billing_payments').where({ kind: 'dispute', dispute_id: disputeId }).forUpdate().first()) as
    (PaymentRow & { dispute_id: string }) | undefined;
  if (!row) return closedBeforeCreated(trx, dispute, now);
  if (row.status !== 'open')
    return { outcome: 'ignored', paymentId: Number(row.id), entryIds: [], followUps: [], detail: `dispute already ${row.status}` };
  const won = fundsComeBack(dispute);
  const original = (await trx('billing_payments').where({ id: row.original_payment_id }).forUpdate().first()) as PaymentRow;
  const held = -Number(row.credit_nano);
  // What was held goes back less what refunds since then could not take (the hold had it): a
  // payment refunded in full while disputed returns nothing — the card has its money back.
  const returned = won ? Math.max(0, held - (await refundShortfall(trx, original))) : 0;
  const entryId =
    returned > 0
      ? await postReferencedEntry(trx, {
          payerId: row.payer_id,
          amountNano: returned,
          reason: `dispute of payment ${String(row.original_payment_id)} won: held funds returned`,
          reference: `dispute_won:${disputeId}`,
          actor: 'processor',
        })
      : undefined;
  // The dispute's row shows its net wallet effect: a won dispute returned what it held.
  await trx('billing_payments')
    .where({ id: row.id })
    .update({ status: won ? 'won' : 'lost', credit_nano: returned - held, updated_at: now, completed_at: now });
  if (won) {
    await trx('billing_payments')
      .where({ id: original.id })
      .update({
        reversed_nano: Number(original.reversed_nano) - returned,
        status: statusAfterRefunds(original, original.refunded_cents),
        updated_at: now,
      });
  }
  return {
    outcome: won ? 'dispute_won' : 'dispute_lost',
    paymentId: Number(row.original_payment_id),
    entryIds: entryId === undefined ? [] : [entryId],
    followUps: [],
  };
}

/**
 * A dispute's close delivered before its creation: its outcome is applied at once — lost, the
 * disputed part of the credit is taken back (under the reference the creation's hold would have
 * used); won, nothing moves — and the dispute is recorded closed, so its creation arriving later
 * holds nothing (a hold no close would ever release).
 */
async function closedBeforeCreated(trx: Knex.Transaction, dispute: Obj, now: Date): Promise<EventResult> {
  const disputeId = str(dispute, 'id') ?? '';
  const found = disputeId
    ? await findPayment(trx, { payment_intent_id: ref(dispute, 'payment_intent') }, metadata(dispute), ref(dispute, 'charge'))
    : undefined;
  if (!found || (found.kind !== 'checkout' && found.kind !== 'auto_topup'))
    return { outcome: 'unknown_payment', entryIds: [], followUps: [], detail: `no dispute or payment for ${disputeId}` };
  const amountCents = disputedCents(dispute, found);
  if (amountCents === undefined)
    return {
      outcome: 'mismatch',
      paymentId: Number(found.id),
      entryIds: [],
      followUps: [],
      detail: `dispute ${disputeId} is for ${String(dispute.amount)} cents`,
    };
  const first = await creditedFirst(trx, found, now);
  const { payment } = first;
  const paymentId = Number(payment.id);
  const won = fundsComeBack(dispute);
  const { entryId } = await takeForDispute(trx, payment, dispute, now, {
    disputeId,
    amountCents,
    take: !won,
    status: won ? 'won' : 'lost',
    reason: `payment ${paymentId} disputed and lost`,
  });
  return { outcome: won ? 'dispute_won' : 'dispute_lost', paymentId, ...afterCredit(first, [], entryId) };
}

/**
 * Whether a closed dispute leaves the payer whole: `won`; `warning_closed` — an inquiry (a
 * `warning_*` dispute, a retrieval request) closed without becoming a chargeback: no funds were
 * ever withdrawn; `prevented` — stopped before it became a dispute. Then what was held goes back.
 * `lost` (or any other status) keeps it taken.
 */
function fundsComeBack(dispute: Obj): boolean {
  const status = str(dispute, 'status');
  return status === 'won' || status === 'warning_closed' || status === 'prevented';
}

/**
 * The cents a dispute of `payment` is for: its `amount`, at most what was paid. An amount that is
 * missing, not a whole number of cents, or not above zero is undefined — a mismatch, as a
 * completion whose amount is not the payment's is: nothing is held or taken by it. So is one
 * above the payment's when the payment is not credited yet: a dispute cannot exceed its charge,
 * so it is another charge's, and must not credit this payment (creditedFirst) to hold it.
 */
function disputedCents(dispute: Obj, payment: PaymentRow): number | undefined {
  const amount = int(dispute, 'amount');
  if (amount === undefined || amount <= 0 || (amount > payment.amount_cents && notCreditedYet(payment))) return undefined;
  return Math.min(amount, payment.amount_cents);
}

/** A top-up whose credit a refund or dispute would make first (creditedFirst): a checkout payment not credited yet. */
const notCreditedYet = (payment: PaymentRow): boolean => payment.kind === 'checkout' && creditablePaymentStatuses.has(payment.status);

/** An event's entries and follow-ups after creditedFirst: the credit's (when it made one) first, then its own. */
function afterCredit(first: CreditedFirst, followUps: FollowUp[], entryId?: number): Pick<EventResult, 'entryIds' | 'followUps'> {
  return {
    entryIds: [...first.entryIds, ...(entryId === undefined ? [] : [entryId])],
    followUps: [...first.followUps, ...followUps],
  };
}

/**
 * Records a dispute of `payment` and, when `take`, takes its part of the credit from the wallet
 * (at most what refunds left of it; the fee was never credited) under the dispute's reference —
 * the one place both an opened dispute's hold and a lost dispute closed before it was opened do so.
 */
async function takeForDispute(
  trx: Knex.Transaction,
  payment: PaymentRow,
  dispute: Obj,
  now: Date,
  what: { disputeId: string; amountCents: number; take: boolean; status: 'open' | 'won' | 'lost'; reason: string },
): Promise<{ taken: number; entryId: number | undefined }> {
  const left = Number(payment.credit_nano) - Number(payment.reversed_nano);
  const taken = what.take ? Math.max(0, Math.min(centsToNano(what.amountCents), left)) : 0;
  const entryId =
    taken > 0
      ? await postReferencedEntry(trx, {
          payerId: payment.payer_id,
          amountNano: -taken,
          reason: what.reason,
          reference: `dispute:${what.disputeId}`,
          actor: 'processor',
        })
      : undefined;
  await trx('billing_payments').insert({
    payer_id: payment.payer_id,
    user_id: payment.user_id,
    kind: 'dispute',
    status: what.status,
    credit_nano: -taken,
    amount_cents: what.amountCents,
    fee_cents: 0,
    charge_id: (ref(dispute, 'charge') ?? payment.charge_id ?? '').slice(0, 255) || null,
    dispute_id: what.disputeId.slice(0, 255),
    original_payment_id: payment.id,
    created_at: now,
    updated_at: now,
    ...(what.status !== 'open' && { completed_at: now }),
  });
  if (taken > 0 || what.status === 'open')
    await trx('billing_payments')
      .where({ id: payment.id })
      .update({ status: 'disputed', reversed_nano: Number(payment.reversed_nano) + taken, updated_at: now });
  return { taken, entryId };
}

/**
 * How much of a payment's credit its refunds should have taken back but did not, because a
 * dispute's hold had already taken it: the refunds' due (all of the credit once refunded in
 * full, else the refunded dollars) less what the refund entries took.
 */
async function refundShortfall(trx: Knex.Transaction, payment: PaymentRow): Promise<number> {
  if (payment.refunded_cents <= 0) return 0;
  return Math.max(0, refundsDue(payment, payment.refunded_cents) - (await refundsTaken(trx, payment)));
}
