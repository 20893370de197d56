// Automatic top-up (docs/billing.md "Automatic top-up"): versioned settings saved with the
// payer's consent to the current policy, and the watcher that charges the default card when the
// balance falls below the threshold.
//
// Detection: a loop in each portal replica (every SVC_AUTO_TOPUP_CHECK_MS) reads the balance
// the gateway enforces — the wallet mirror in the shared store, which every settlement updates —
// for each payer with automatic top-up on. The gateway is not involved, so a payer drained by any
// number of gateway replicas is seen the same way. Creating the operation is one transaction
// that locks the payer's settings row and re-checks everything (enabled, not paused, nothing in
// progress, monthly cap, a recent top-up not yet visible); a partial unique index allows one
// pending operation per payer whatever races. The charge carries the operation id as its
// idempotency key, so a retry after a crash or a lost answer is the same charge at the processor.
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import Stripe from 'stripe';
import { ApiError } from '../errors/index.js';
import type { User } from '../identity/users.js';
import type { Store } from '../store/types.js';
import { applyMirrorOutbox, enforcedBalanceNano } from '../wallets/mirror.js';
import {
  autoTopupPolicyVersion,
  creditOperation,
  recordOperationUnknown,
  operationsThisMonthNano,
  presentOperation,
  presentSettings,
  recordOperationFailure,
  type AutoTopupRow,
  type OperationRow,
} from './auto-topup-store.js';
import { findCustomer, installId } from './customers.js';
import { collectionFor, centsToNano, currency, formatCents, usdToCents } from './money.js';
import type { BillingService, Processor } from './service.js';
import type { BillingSettings } from './settings.js';

/** The body of POST /api/billing/auto-topup, already type-checked by the route. */
export interface AutoTopupInput {
  /** The version these settings replace (0 when there are none yet). */
  version: number;
  enabled: boolean;
  threshold_usd?: number | string;
  amount_usd?: number | string;
  monthly_cap_usd?: number | string;
  consent?: boolean;
  policy_version?: string;
}

/** After a successful top-up, no new one for this long: the credit may not be in the mirror yet. */
const settleMs = 15_000;
/** A pending operation untouched this long is retried (its creator may have crashed). */
const staleMs = 30_000;
/** Attempts under one key before an operation without a definite answer is recorded `unknown`. */
const maxAttempts = 8;
/**
 * How long an operation whose outcome is `unknown` keeps the payer from a new one (it may have
 * charged): the processor redelivers its events for up to three days, so by then it would have
 * said whether the charge went through.
 */
const unknownHoldMs = 3 * 24 * 3600_000;

/**
 * A refused value: `msg` is the rule as a form shows it beside the field ("must be …"), `human`
 * the whole sentence for the error's human_message — the rule, not "Some input is not valid".
 */
const invalidField = (field: string, msg: string, human: string) =>
  new ApiError('validation_error', {
    status: 422,
    param: field,
    humanMessage: human,
    details: { detail: [{ loc: ['body', field], msg, type: 'value_error' }] },
  });

/** What each amount is called in a refusal. */
const amountNames = { threshold_usd: 'Threshold', amount_usd: 'Top-up amount', monthly_cap_usd: 'Monthly cap' } as const;

/** The consent rule, for the form (beside its box) and the API alike. */
const consentRule = 'tick the box authorising automatic charges to turn automatic top-up on';

export class AutoTopup {
  constructor(
    private readonly deps: {
      knex: Knex;
      store: Store;
      settings: BillingSettings;
      processor: Processor | undefined;
      billing: BillingService;
      clock: () => number;
      logger: { warn(facts: object, message: string): void };
    },
  ) {}

  private get now(): Date {
    return new Date(this.deps.clock());
  }

  async view(payerId: string) {
    const row = (await this.deps.knex('billing_auto_topup').where({ payer_id: payerId }).first()) as AutoTopupRow | undefined;
    return presentSettings(row, await operationsThisMonthNano(this.deps.knex, payerId, this.now));
  }

  /**
   * Saves new settings for the caller's payer. `version` must be the current one (a stale form
   * is refused with 409 and the current version); turning it on needs `consent: true` to the
   * current policy version and a default card. The values are validated alike on or off (422 with
   * the field) and stored as sent; off, a value left out keeps the stored one.
   */
  async save(user: User, input: AutoTopupInput) {
    if (!this.deps.processor)
      throw new ApiError('billing_unavailable', {
        status: 503,
        humanMessage: 'Card payments are not set up on this portal, so automatic top-up cannot be used',
      });
    const payer = await this.deps.billing.managedPayer(user);
    const { settings } = this.deps;
    const min = Math.round(settings.SVC_BILLING_MIN_TOPUP_USD * 100);
    const max = Math.round(settings.SVC_BILLING_MAX_TOPUP_USD * 100);
    // `lowIs`: what the smallest allowed value is, when it is not a fixed number ("the top-up amount").
    const cents = (field: 'threshold_usd' | 'amount_usd' | 'monthly_cap_usd', low: number, high: number, lowIs?: string) => {
      const value = input[field];
      const parsed = value === undefined ? undefined : usdToCents(value);
      if (parsed === undefined || parsed < low || parsed > high) {
        const rule = `must be an amount in USD with at most two decimals, between ${formatCents(low)}${lowIs ? ` (${lowIs})` : ''} and ${formatCents(high)}`;
        throw invalidField(field, rule, `${amountNames[field]} ${rule}`);
      }
      return parsed;
    };
    const now = this.now;
    // The values are checked by the same rules whether it is turned on or off, and kept as sent,
    // so turning it back on shows what was typed. On, all three are required; off, one left out
    // keeps the stored one (`undefined` here).
    const sent = (field: 'threshold_usd' | 'amount_usd' | 'monthly_cap_usd') => input.enabled || input[field] !== undefined;
    const amount = sent('amount_usd') ? cents('amount_usd', min, max) : undefined;
    const values = {
      threshold: sent('threshold_usd') ? cents('threshold_usd', 0, max) : undefined,
      amount,
      // At least the amount sent with it (off and without an amount: at least the smallest amount).
      cap: sent('monthly_cap_usd')
        ? cents('monthly_cap_usd', amount ?? min, max * 10, amount === undefined ? 'the smallest top-up' : 'the top-up amount')
        : undefined,
    };
    if (input.enabled) {
      if (input.consent !== true)
        throw invalidField(
          'consent',
          consentRule,
          `${consentRule[0]!.toUpperCase()}${consentRule.slice(1)} (consent: true, to the policy version shown)`,
        );
      if (input.policy_version !== autoTopupPolicyVersion)
        throw new ApiError('conflict', {
          param: 'policy_version',
          humanMessage: `The automatic top-up policy is now version ${autoTopupPolicyVersion}; read it and consent again`,
          details: { policy_version: autoTopupPolicyVersion },
        });
      const customer = await findCustomer(this.deps.knex, payer.payerId);
      if (!customer?.default_payment_method_id)
        throw new ApiError('conflict', { humanMessage: 'Save a card and make it the default before turning automatic top-up on' });
    }
    const saved = await this.deps.knex.transaction(async (trx) => {
      const current = (await trx('billing_auto_topup').where({ payer_id: payer.payerId }).forUpdate().first()) as AutoTopupRow | undefined;
      const currentVersion = current?.version ?? 0;
      if (input.version !== currentVersion)
        throw new ApiError('conflict', {
          param: 'version',
          humanMessage: `These settings were changed since you loaded them (now version ${currentVersion}); reload and try again`,
          details: { current_version: currentVersion },
        });
      const row = {
        payer_id: payer.payerId,
        version: currentVersion + 1,
        enabled: input.enabled,
        threshold_nano: values.threshold !== undefined ? centsToNano(values.threshold) : (current?.threshold_nano ?? 0),
        amount_nano: values.amount !== undefined ? centsToNano(values.amount) : (current?.amount_nano ?? 0),
        monthly_cap_nano: values.cap !== undefined ? centsToNano(values.cap) : (current?.monthly_cap_nano ?? 0),
        policy_version: input.enabled ? autoTopupPolicyVersion : (current?.policy_version ?? autoTopupPolicyVersion),
        // Turning it off keeps the consent given before, if any; it never records one.
        consented_by: input.enabled ? user.id : (current?.consented_by ?? null),
        consented_at: input.enabled ? now : (current?.consented_at ?? null),
        paused_reason: null,
        updated_at: now,
      };
      if (current) await trx('billing_auto_topup').where({ payer_id: payer.payerId }).update(row);
      else await trx('billing_auto_topup').insert(row);
      return row;
    });
    await this.deps.billing.afterCommit(
      [],
      [
        {
          kind: 'activity',
          entry: {
            userId: user.id,
            kind: 'auto_topup_changed',
            summary: saved.enabled
              ? `Automatic top-up on: ${formatCents(values.amount!)} when the balance falls below ${formatCents(values.threshold!)}, at most ${formatCents(values.cap!)} a month`
              : 'Automatic top-up off',
            details: { version: saved.version, payer: payer.payerId },
          },
        },
      ],
    );
    return this.view(payer.payerId);
  }

  /** One of the caller's operations; another payer's (or an unknown id) is 404. Never creates or retries. */
  async operation(user: User, operationId: string) {
    const payer = await this.deps.billing.payerOf(user);
    const row = (await this.deps.knex('billing_auto_topup_operations').where({ id: operationId, payer_id: payer.payerId }).first()) as
      OperationRow | undefined;
    const visible = row && (row.user_id === user.id || (await this.deps.billing.mayManage(user, payer.payerId)));
    if (!row || !visible)
      throw new ApiError('not_found', { humanMessage: 'There is no automatic top-up operation with this id for your wallet' });
    return presentOperation(row);
  }

  /* ------------------------------------------------------------------ the watcher */

  /** One pass: sweep the mirror outbox, retry stale operations, start the ones balances call for. */
  async runOnce(): Promise<void> {
    const { knex, store } = this.deps;
    await applyMirrorOutbox(knex, store, { olderThanMs: 5_000, now: this.now });
    if (!this.deps.processor) return;
    const stale = (await knex('billing_auto_topup_operations')
      .where({ status: 'pending' })
      .andWhere('updated_at', '<', new Date(this.now.getTime() - staleMs))
      .limit(50)) as OperationRow[];
    for (const op of stale) await this.charge(op);
    const candidates = (await knex('billing_auto_topup').where({ enabled: true }).whereNull('paused_reason')) as AutoTopupRow[];
    for (const settings of candidates) {
      const balance = await this.balanceNano(settings.payer_id);
      if (balance >= Number(settings.threshold_nano)) continue;
      const op = await this.createOperation(settings.payer_id);
      if (op) await this.charge(op);
    }
  }

  /** The balance the gateway enforces: its mirror in the store (ended leases given back), else the ledger (read through `db`). */
  private async balanceNano(payerId: string, db: Knex = this.deps.knex): Promise<number> {
    const mirrored = await enforcedBalanceNano(this.deps.store, payerId, this.now);
    return mirrored ?? this.deps.billing.balanceNano(payerId, db);
  }

  /** Creates the payer's operation unless something says not to; undefined when none was made. */
  async createOperation(payerId: string): Promise<OperationRow | undefined> {
    const now = this.now;
    const install = await installId(this.deps.knex);
    try {
      return await this.deps.knex.transaction(async (trx) => {
        const settings = (await trx('billing_auto_topup').where({ payer_id: payerId }).forUpdate().first()) as AutoTopupRow | undefined;
        if (!settings?.enabled || settings.paused_reason) return undefined;
        const latest = (await trx('billing_auto_topup_operations').where({ payer_id: payerId }).orderBy('created_at', 'desc').first()) as
          OperationRow | undefined;
        if (latest?.status === 'pending') return undefined;
        if (latest?.status === 'unknown' && now.getTime() - new Date(latest.updated_at).getTime() < unknownHoldMs) return undefined;
        if (latest?.status === 'succeeded' && now.getTime() - new Date(latest.updated_at).getTime() < settleMs) return undefined;
        // Checked again under the lock: the balance may have been topped up meanwhile.
        if ((await this.balanceNano(payerId, trx)) >= Number(settings.threshold_nano)) return undefined;
        const amountNano = Number(settings.amount_nano);
        if ((await operationsThisMonthNano(trx, payerId, now)) + amountNano > Number(settings.monthly_cap_nano)) return undefined;
        const collection = collectionFor(Math.round(amountNano / centsToNano(1)), {
          feeBps: this.deps.settings.SVC_BILLING_FEE_BPS,
          feeFixedCents: this.deps.settings.SVC_BILLING_FEE_FIXED_CENTS,
        });
        // What it charges is fixed now: a retry under its key must send the very same request,
        // whatever becomes the default card meanwhile.
        const customer = (await trx('billing_customers').where({ payer_id: payerId }).first()) as
          { processor_customer_id: string; default_payment_method_id: string | null } | undefined;
        const op: Partial<OperationRow> = {
          install_id: install,
          processor_customer_id: customer?.processor_customer_id ?? null,
          payment_method_id: customer?.default_payment_method_id ?? null,
          id: `ato_${randomBytes(12).toString('hex')}`,
          payer_id: payerId,
          settings_version: settings.version,
          status: 'pending',
          amount_nano: amountNano,
          amount_cents: collection.totalCents,
          fee_cents: collection.feeCents,
          user_id: settings.consented_by,
          attempts: 0,
          created_at: now,
          updated_at: now,
        };
        const [row] = (await trx('billing_auto_topup_operations').insert(op).returning('*')) as OperationRow[];
        return row;
      });
    } catch (error) {
      // The one-open-operation index refused a racing twin: the other one stands.
      if ((error as { code?: string }).code === '23505') return undefined;
      throw error;
    }
  }

  /**
   * Charges an operation off-session, keyed by the operation, with the customer and card stored on
   * it when it was created — every attempt sends the same request. One whose payment intent is
   * known (the processor answered `processing`) is looked up instead of charged again.
   */
  async charge(op: OperationRow): Promise<void> {
    const processor = this.deps.processor!;
    const { knex } = this.deps;
    let customerId = op.processor_customer_id;
    let paymentMethodId = op.payment_method_id;
    if (customerId === null || paymentMethodId === null) {
      // An operation created before the charge was stored on it: fixed now, once, for its retries.
      const customer = await findCustomer(knex, op.payer_id);
      if (!customer?.default_payment_method_id) {
        await this.fail(op.id, { code: 'no_payment_method', message: 'There is no default card to charge', paymentIntentId: null });
        return;
      }
      await knex('billing_auto_topup_operations')
        .where({ id: op.id })
        .whereNull('payment_method_id')
        .update({ processor_customer_id: customer.processor_customer_id, payment_method_id: customer.default_payment_method_id });
      const stored = (await knex('billing_auto_topup_operations').where({ id: op.id }).first()) as OperationRow;
      customerId = stored.processor_customer_id!;
      paymentMethodId = stored.payment_method_id!;
    }
    await knex('billing_auto_topup_operations')
      .where({ id: op.id, status: 'pending' })
      .update({ attempts: knex.raw('attempts + 1'), updated_at: this.now });
    let intent: Stripe.PaymentIntent;
    try {
      intent = op.payment_intent_id
        ? await processor.client.paymentIntents.retrieve(op.payment_intent_id)
        : await processor.client.paymentIntents.create(
            {
              amount: op.amount_cents,
              currency,
              customer: customerId,
              payment_method: paymentMethodId,
              // The saved card is charged with the payer away: no redirect-based method, so the
              // processor never asks for a return_url (automatic payment methods are on by default).
              automatic_payment_methods: { enabled: true, allow_redirects: 'never' },
              off_session: true,
              confirm: true,
              description: `Automatic wallet top-up ${op.id}`,
              // An operation created before its installation id was recorded sends what it sent
              // before (the same request under its key).
              metadata: { operation_id: op.id, payer_id: op.payer_id, ...(op.install_id && { install_id: op.install_id }) },
            },
            { idempotencyKey: op.id },
          );
    } catch (error) {
      if (
        error instanceof Stripe.errors.StripeCardError ||
        (error instanceof Stripe.errors.StripeError && error.type === 'StripeCardError')
      ) {
        const e = error as Stripe.errors.StripeCardError;
        await this.fail(op.id, {
          code: e.decline_code ?? e.code ?? 'card_declined',
          message: e.message,
          paymentIntentId: e.payment_intent?.id ?? null,
        });
        return;
      }
      const e = error instanceof Stripe.errors.StripeError ? error : undefined;
      // The key was used with other parameters: whatever the first request did stands and a retry
      // cannot learn it — the outcome is unknown until the processor's event says.
      if (e?.type === 'StripeIdempotencyError') {
        await this.unknown(op.id, { code: 'idempotency_error', message: e.message });
        return;
      }
      // Refused as invalid (a 4xx other than a card error): the processor did nothing and would
      // refuse every retry alike — recorded at once with its reason, never retried.
      if (e?.type === 'StripeInvalidRequestError') {
        await this.fail(op.id, {
          code: `invalid_request${e.code ? `:${e.code}` : ''}`,
          message: `The payment processor refused the charge: ${e.message}`,
          paymentIntentId: null,
          refused: true,
        });
        return;
      }
      // A 5xx or no answer: the charge may have been made. Retried with the same key (the same
      // request), and after the last attempt recorded `unknown` — never as a decline.
      const indeterminate = e === undefined || e.statusCode === undefined || e.statusCode >= 500 || e.type === 'StripeConnectionError';
      if (op.attempts + 1 >= maxAttempts) {
        if (indeterminate || op.failure_code === 'indeterminate')
          await this.unknown(op.id, {
            code: 'outcome_unknown',
            message: 'The payment processor did not confirm the charge; it is settled when the processor reports it',
          });
        else
          await this.fail(op.id, {
            code: 'processor_unavailable',
            message: 'The payment processor could not be reached',
            paymentIntentId: null,
            refused: true,
          });
      } else {
        if (indeterminate)
          await knex('billing_auto_topup_operations').where({ id: op.id, status: 'pending' }).update({ failure_code: 'indeterminate' });
        this.deps.logger.warn(
          { err: error, operation: op.id },
          'automatic top-up charge not confirmed; it will be retried with the same key',
        );
      }
      return;
    }
    if (intent.status === 'succeeded') await this.succeed(op.id, intent);
    else if (intent.status === 'processing' || intent.status === 'requires_capture') {
      // Not decided yet (a delayed method, an authorisation): the operation stays pending with
      // its intent, settled by payment_intent.succeeded / payment_failed or looked up when stale.
      await knex('billing_auto_topup_operations')
        .where({ id: op.id, status: 'pending' })
        .update({ payment_intent_id: intent.id, updated_at: this.now });
    } else
      await this.fail(op.id, {
        code: intent.status === 'requires_action' ? 'authentication_required' : `payment_${intent.status}`,
        message: intent.last_payment_error?.message ?? `The payment is ${intent.status}`,
        paymentIntentId: intent.id,
      });
  }

  private async succeed(operationId: string, intent: Stripe.PaymentIntent): Promise<void> {
    const chargeId = typeof intent.latest_charge === 'string' ? intent.latest_charge : (intent.latest_charge?.id ?? null);
    const done = await this.deps.knex.transaction((trx) => creditOperation(trx, operationId, { id: intent.id, chargeId }, this.now));
    if (done) await this.deps.billing.afterCommit(done.entryIds, done.followUps);
  }

  private async unknown(operationId: string, reason: { code: string; message: string }): Promise<void> {
    const followUps = await this.deps.knex.transaction((trx) => recordOperationUnknown(trx, operationId, reason, this.now));
    this.deps.logger.warn(
      { operation: operationId, reason: reason.code },
      'automatic top-up charge has no definite outcome; the processor event settles it',
    );
    if (followUps) await this.deps.billing.afterCommit([], followUps);
  }

  private async fail(
    operationId: string,
    failure: { code: string; message: string; paymentIntentId: string | null; refused?: boolean },
  ): Promise<void> {
    const recorded = await this.deps.knex.transaction((trx) => recordOperationFailure(trx, operationId, failure, this.now));
    if (recorded) await this.deps.billing.afterCommit([], recorded.followUps);
  }
}

/** Runs the watcher every `intervalMs` until stopped; a failed pass is logged and the next one runs. */
export function startAutoTopupWatcher(
  autoTopup: AutoTopup,
  intervalMs: number,
  logger: { warn(facts: object, message: string): void },
): { stop(): Promise<void> } {
  let running: Promise<void> | undefined;
  let stopped = false;
  const timer = setInterval(() => {
    if (running || stopped) return;
    running = autoTopup
      .runOnce()
      .catch((error: unknown) => logger.warn({ err: error }, 'automatic top-up pass failed'))
      .finally(() => {
        running = undefined;
      });
  }, intervalMs);
  timer.unref();
  return {
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
