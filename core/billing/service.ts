// Billing for the portal's routes (docs/billing.md): hosted checkout top-ups with the fee shown
// first, the confirmation after the redirect, saved cards, the payment history and the signed
// webhook. Routes check who is asking; this decides what happens, talks to the processor and
// keeps the ledger exact. Without a configured processor every payment action answers
// `503 billing_unavailable` saying card payments are not set up, and nothing is written.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Knex } from 'knex';
import Stripe from 'stripe';
import { nanoPerUsd } from '../budget/usage.js';
import { ApiError } from '../errors/index.js';
import type { User } from '../identity/users.js';
import type { Store } from '../store/types.js';
import { applyMirrorOutbox } from '../wallets/mirror.js';
import { ensureCustomer, installId, findCustomer, setLocalDefault } from './customers.js';
import { applyProcessorEvent, expireCheckoutSession, expirePendingPayment, type EventResult } from './events.js';
import type { FollowUp, FollowUpCarrier } from './follow-ups.js';
import { collectionFor, currency, describeFeePolicy, formatCents, centsToNano, nanoToUsd, usdToCents, type Collection } from './money.js';
import { mayManagePayer, resolveEffectivePayer, type EffectivePayer } from './payer.js';
import { listPayments, presentPayment, type PaymentRow } from './payments.js';
import type { ProcessorConfig } from './processor.js';
import type { BillingSettings } from './settings.js';

/** The configured processor: the library's client and where it points. */
export interface Processor {
  client: Stripe;
  config: ProcessorConfig;
}

export interface BillingServiceDeps {
  knex: Knex;
  store: Store;
  settings: BillingSettings;
  processor: Processor | undefined;
  /** The portal's public address (redirect targets). */
  baseUrl: string;
  /**
   * The portal's server-side secret (its pepper): keys the proof a checkout's cancel link carries,
   * so only the processor's redirect, not a guessed payment id, can expire that checkout.
   */
  secret: string;
  clock: () => number;
  carrier: FollowUpCarrier;
  logger: { warn(facts: object, message: string): void; error(facts: object, message: string): void };
}

/** Path of the webhook endpoint, to register with the processor. */
export const webhookPath = '/api/billing/processor/webhook';

const notConfigured = () =>
  new ApiError('billing_unavailable', {
    status: 503,
    humanMessage: 'Card payments are not set up on this portal (no payment processor is configured); nothing was charged',
  });

/** A processor failure as the catalogue error the caller sees; nothing was charged. */
export function processorUnavailable(cause: unknown): ApiError {
  return new ApiError('billing_unavailable', {
    humanMessage: 'The payment processor could not be reached or refused the request; nothing was charged. Try again in a minute',
    retryAfterSeconds: 30,
    cause,
  });
}

/** A pm_… id as the processor issues them. */
export const paymentMethodIdPattern = /^pm_[A-Za-z0-9_]{1,200}$/;

export class BillingService {
  constructor(private readonly deps: BillingServiceDeps) {}

  get configured(): boolean {
    return this.deps.processor !== undefined;
  }

  get mode(): ProcessorConfig['mode'] | undefined {
    return this.deps.processor?.config.mode;
  }

  private get now(): Date {
    return new Date(this.deps.clock());
  }

  private processor(): Processor {
    if (!this.deps.processor) throw notConfigured();
    return this.deps.processor;
  }

  /** What the billing page needs to know about payments here. */
  processorConfig() {
    const { settings } = this.deps;
    const policy = { feeBps: settings.SVC_BILLING_FEE_BPS, feeFixedCents: settings.SVC_BILLING_FEE_FIXED_CENTS };
    return {
      configured: this.configured,
      processor: this.deps.processor ? this.deps.processor.config.mode : null,
      test_mode: this.deps.processor ? this.deps.processor.config.testMode : null,
      api_host: this.deps.processor?.config.apiUrl ? new URL(this.deps.processor.config.apiUrl).host : null,
      publishable_key: this.deps.processor?.config.publishableKey ?? null,
      currency,
      min_topup_usd: settings.SVC_BILLING_MIN_TOPUP_USD,
      max_topup_usd: settings.SVC_BILLING_MAX_TOPUP_USD,
      fee_policy: {
        kind: policy.feeBps === 0 && policy.feeFixedCents === 0 ? 'absorbed' : 'gross_up',
        percent: policy.feeBps / 100,
        fixed_usd: policy.feeFixedCents / 100,
        description: describeFeePolicy(policy),
      },
      webhook_path: webhookPath,
    };
  }

  /**
   * The amount a person asked for, checked against the limits, and what the card will be
   * charged for it (422 `amount` otherwise).
   */
  quote(amount: unknown): Collection {
    const { settings } = this.deps;
    const cents = typeof amount === 'number' || typeof amount === 'string' ? usdToCents(amount) : undefined;
    const min = Math.round(settings.SVC_BILLING_MIN_TOPUP_USD * 100);
    const max = Math.round(settings.SVC_BILLING_MAX_TOPUP_USD * 100);
    if (cents === undefined || cents < min || cents > max)
      throw new ApiError('validation_error', {
        status: 422,
        param: 'amount',
        humanMessage: `The amount must be a number of US dollars from ${formatCents(min)} to ${formatCents(max)}, with at most two decimals`,
        details: {
          detail: [
            {
              loc: ['body', 'amount'],
              msg: `must be from ${min / 100} to ${max / 100} USD with at most two decimals`,
              type: 'value_error',
            },
          ],
        },
      });
    return collectionFor(cents, { feeBps: settings.SVC_BILLING_FEE_BPS, feeFixedCents: settings.SVC_BILLING_FEE_FIXED_CENTS });
  }

  /** The wallet a user's top-ups fund and whose balance their pages show. */
  payerOf(user: User): Promise<EffectivePayer> {
    return resolveEffectivePayer(this.deps.knex, user.id);
  }

  mayManage(user: User, payerId: string): Promise<boolean> {
    return mayManagePayer(this.deps.knex, user, payerId);
  }

  /**
   * Ledger balance of a payer in nano-USD. Inside a transaction pass it as `db`: a second
   * connection would wait for that transaction on the embedded database (one backend).
   */
  async balanceNano(payerId: string, db: Knex = this.deps.knex): Promise<number> {
    const row = (await db('wallet_entries')
      .where({ payer_id: payerId })
      .sum({ total: db.raw('coalesce(amount_nano, amount_micro * 1000)') })
      .first()) as { total: string | number | null } | undefined;
    return Number(row?.total ?? 0);
  }

  /**
   * Starts a hosted checkout for `amount` USD of wallet credit: a pending payment, then a
   * payment-mode session whose line items are the credit and the fee (integer cents), keyed by
   * the payment so a retried call cannot open a second session for it.
   */
  async startCheckout(
    user: User,
    amount: unknown,
  ): Promise<{ url: string; paymentId: number; collection: Collection; payer: EffectivePayer }> {
    const processor = this.processor();
    const collection = this.quote(amount);
    const payer = await this.payerOf(user);
    const customer = await this.callProcessor(() =>
      ensureCustomer(this.deps.knex, processor.client, payer.payerId, { email: user.email, name: user.displayName }),
    );
    const now = this.now;
    const install = await installId(this.deps.knex);
    const [row] = (await this.deps
      .knex('billing_payments')
      .insert({
        // Its session and PaymentIntent carry this id: their events are told from another
        // deployment's on the same account, whose payment ids repeat ours.
        install_id: install,
        payer_id: payer.payerId,
        user_id: user.id,
        kind: 'checkout',
        status: 'pending',
        credit_nano: centsToNano(collection.creditCents),
        amount_cents: collection.totalCents,
        fee_cents: collection.feeCents,
        currency,
        created_at: now,
        updated_at: now,
      })
      .returning('id')) as { id: string | number }[];
    const paymentId = Number(row!.id);
    const metadata = { payment_id: String(paymentId), payer_id: payer.payerId, user_id: String(user.id), install_id: install };
    const lineItems = [
      {
        quantity: 1,
        price_data: { currency, unit_amount: collection.creditCents, product_data: { name: `Wallet credit (${payer.payerId})` } },
      },
      ...(collection.feeCents > 0
        ? [{ quantity: 1, price_data: { currency, unit_amount: collection.feeCents, product_data: { name: 'Card processing fee' } } }]
        : []),
    ];
    let session: Stripe.Checkout.Session;
    try {
      session = await processor.client.checkout.sessions.create(
        {
          mode: 'payment',
          // Cards only, as the portal saves and lists them.
          allowed_payment_method_types: ['card'],
          customer: customer.processor_customer_id,
          client_reference_id: String(paymentId),
          line_items: lineItems,
          metadata,
          payment_intent_data: { metadata, description: `Wallet top-up, payment ${paymentId}` },
          success_url: `${this.deps.baseUrl}/dashboard/billing/fund?session_id={CHECKOUT_SESSION_ID}`,
          cancel_url: `${this.deps.baseUrl}/dashboard/billing/fund?cancelled=${paymentId}&proof=${this.cancelProof(paymentId)}`,
        },
        // Unique to this database and row (a restored backup reuses payment ids, not their creation time).
        { idempotencyKey: `checkout:${install}:payment:${paymentId}:${now.getTime()}` },
      );
    } catch (error) {
      // No session exists for it: the attempt never became a payment.
      await this.deps.knex('billing_payments').where({ id: paymentId, status: 'pending' }).delete();
      throw processorUnavailable(error);
    }
    await this.deps.knex('billing_payments').where({ id: paymentId }).update({ checkout_session_id: session.id });
    await this.deps.knex('billing_checkout_sessions').insert({
      session_id: session.id,
      mode: 'payment',
      payer_id: payer.payerId,
      user_id: user.id,
      payment_id: paymentId,
      created_at: now,
    });
    if (!session.url) throw processorUnavailable(new Error('the processor returned a session without a hosted page URL'));
    return { url: session.url, paymentId, collection, payer };
  }

  /**
   * The proof a checkout's cancel link carries: a keyed hash of its payment id. Payment ids are
   * sequential and the cancel redirect is itself a cross-site navigation, so neither the id nor
   * the request's origin shows that the processor sent the browser back; only this, which no
   * other site can compute, does.
   */
  cancelProof(paymentId: number): string {
    return createHmac('sha256', this.deps.secret).update(`checkout cancel link:${paymentId}`).digest('base64url');
  }

  /** Whether `proof` is the cancel link's proof for this payment (compared in constant time). */
  validCancelProof(paymentId: number, proof: string | undefined): boolean {
    if (proof === undefined) return false;
    const expected = Buffer.from(this.cancelProof(paymentId));
    const sent = Buffer.from(proof);
    return sent.length === expected.length && timingSafeEqual(sent, expected);
  }

  /**
   * The user came back from the hosted page without paying (its cancel link): the session is
   * expired at the processor, so it can no longer be paid behind the user's back, and the
   * payment is `expired` rather than pending forever. Best effort: a session already paid (the
   * processor refuses to expire it) or a processor out of reach leaves the payment to the
   * processor's events, which settle it either way. Without the link's proof (`cancelProof`)
   * nothing is expired: another site can send a browser to `?cancelled=<id>`, and the checkout
   * must stay payable then. True when the link was the processor's (it carried the proof).
   */
  async cancelCheckout(user: User, paymentId: number, proof: string | undefined): Promise<boolean> {
    if (!this.validCancelProof(paymentId, proof)) return false;
    const payment = (await this.deps
      .knex('billing_payments')
      .where({ id: paymentId, user_id: user.id, kind: 'checkout', status: 'pending' })
      .first()) as PaymentRow | undefined;
    const sessionId = payment?.checkout_session_id;
    if (!sessionId) return true;
    try {
      await this.processor().client.checkout.sessions.expire(sessionId);
    } catch (error) {
      this.deps.logger.warn({ err: error, payment_id: paymentId }, 'a cancelled checkout session could not be expired');
      return true;
    }
    // Session row first, then the payment: the order the processor's checkout.session.expired
    // event (sent for this very expiry, possibly at once) locks them in, or the two deadlock.
    await this.deps.knex.transaction(async (trx) => {
      await expireCheckoutSession(trx, sessionId);
      await expirePendingPayment(trx, paymentId, this.now);
    });
    return true;
  }

  /**
   * Where to send a browser whose fund form was sent again (a double click, a reload) to the
   * checkout its first submission opened, instead of opening a second one (another pending
   * top-up): the processor's hosted page while the session can still be paid, else the
   * confirmation page, which says what became of it (paid, expired). Asked of the processor: the
   * hosted page's address is not kept. Unknown to this user (or the processor out of reach): the
   * confirmation page when the session is known, else the billing overview.
   */
  async openedCheckout(user: User, paymentId: number): Promise<string> {
    const payment = (await this.deps.knex('billing_payments').where({ id: paymentId, user_id: user.id, kind: 'checkout' }).first()) as
      PaymentRow | undefined;
    const sessionId = payment?.checkout_session_id;
    if (!sessionId) return '/dashboard/billing';
    const confirmation = `/dashboard/billing/fund?session_id=${encodeURIComponent(sessionId)}`;
    if (payment.status !== 'pending') return confirmation;
    try {
      const session = await this.processor().client.checkout.sessions.retrieve(sessionId);
      return session.status === 'open' && session.url ? session.url : confirmation;
    } catch (error) {
      this.deps.logger.warn({ err: error, payment_id: paymentId }, 'the checkout of a form sent again could not be read');
      return confirmation;
    }
  }

  /**
   * After the redirect back: what the ledger holds for the caller's session (never credited from
   * here — only the signed event credits). Another user's session is unknown (404).
   */
  async checkoutStatus(user: User, sessionId: string) {
    const row = (await this.deps.knex('billing_checkout_sessions').where({ session_id: sessionId, user_id: user.id }).first()) as
      { session_id: string; mode: 'payment' | 'setup'; payer_id: string; payment_id: string | number | null; status: string } | undefined;
    if (!row) throw new ApiError('not_found', { humanMessage: 'There is no checkout with this id among yours' });
    if (row.mode === 'setup')
      return {
        session_id: row.session_id,
        mode: 'setup',
        status: row.status === 'complete' ? 'card_saved' : 'pending',
        payer: row.payer_id,
        payment: null,
        entry: null,
      };
    const payment = (await this.deps.knex('billing_payments').where({ id: row.payment_id }).first()) as PaymentRow | undefined;
    const entry = (await this.deps
      .knex('wallet_entries')
      .where({ reference: `checkout:${row.session_id}` })
      .first('id', 'amount_nano', 'created_at')) as { id: string | number; amount_nano: string | number; created_at: Date } | undefined;
    const status = entry
      ? payment?.status === 'succeeded'
        ? 'credited'
        : (payment?.status ?? 'credited')
      : (payment?.status ?? 'pending');
    return {
      session_id: row.session_id,
      mode: 'payment',
      status,
      /** The wallet the checkout credits (its payer when it was opened). */
      payer: row.payer_id,
      payment: payment ? presentPayment(payment) : null,
      entry: entry
        ? { id: String(entry.id), amount_usd: nanoToUsd(Number(entry.amount_nano)), created: new Date(entry.created_at).toISOString() }
        : null,
      balance_usd: nanoToUsd(await this.balanceNano(row.payer_id)),
    };
  }

  /** Starts hosted card saving (setup mode) for the payer the caller manages. */
  async startSetup(user: User): Promise<{ url: string }> {
    const processor = this.processor();
    const payer = await this.managedPayer(user);
    const customer = await this.callProcessor(() =>
      ensureCustomer(this.deps.knex, processor.client, payer.payerId, { email: user.email, name: user.displayName }),
    );
    const install = await installId(this.deps.knex);
    const session = await this.callProcessor(() =>
      processor.client.checkout.sessions.create(
        {
          mode: 'setup',
          // Cards only: the card list and automatic top-up show and charge cards, so no bank debit
          // may become the default.
          allowed_payment_method_types: ['card'],
          currency,
          customer: customer.processor_customer_id,
          metadata: { payer_id: payer.payerId, user_id: String(user.id), install_id: install },
          success_url: `${this.deps.baseUrl}/dashboard/billing?setup_session={CHECKOUT_SESSION_ID}`,
          cancel_url: `${this.deps.baseUrl}/dashboard/billing`,
        },
        { idempotencyKey: `setup:${payer.payerId}:${this.deps.clock()}:${Math.random().toString(36).slice(2)}` },
      ),
    );
    await this.deps
      .knex('billing_checkout_sessions')
      .insert({ session_id: session.id, mode: 'setup', payer_id: payer.payerId, user_id: user.id });
    if (!session.url) throw processorUnavailable(new Error('the processor returned a session without a hosted page URL'));
    return { url: session.url };
  }

  /** The payer's saved cards, the default first. */
  async paymentMethods(user: User) {
    const processor = this.processor();
    const payer = await this.managedPayer(user);
    const customer = await findCustomer(this.deps.knex, payer.payerId);
    if (!customer) return { payer: payer.payerId, default_payment_method: null, data: [] };
    const [list, remote] = await this.callProcessor(() =>
      Promise.all([
        processor.client.customers.listPaymentMethods(customer.processor_customer_id, { limit: 100 }),
        processor.client.customers.retrieve(customer.processor_customer_id),
      ]),
    );
    const remoteDefault =
      'deleted' in remote && remote.deleted ? null : ((remote as Stripe.Customer).invoice_settings?.default_payment_method ?? null);
    const defaultId = typeof remoteDefault === 'string' ? remoteDefault : (remoteDefault?.id ?? null);
    if (defaultId !== customer.default_payment_method_id) await setLocalDefault(this.deps.knex, payer.payerId, defaultId);
    const data = list.data
      .filter((pm) => pm.type === 'card' && pm.card)
      .map((pm) => ({
        id: pm.id,
        brand: pm.card!.brand,
        last4: pm.card!.last4,
        exp_month: pm.card!.exp_month,
        exp_year: pm.card!.exp_year,
        is_default: pm.id === defaultId,
      }))
      .sort((a, b) => Number(b.is_default) - Number(a.is_default));
    return { payer: payer.payerId, default_payment_method: defaultId, data };
  }

  /** A card of the caller's payer, else 404 (another payer's card is never touched). */
  private async ownedMethod(user: User, pmId: string) {
    const processor = this.processor();
    const payer = await this.managedPayer(user);
    const customer = await findCustomer(this.deps.knex, payer.payerId);
    const notOurs = () => new ApiError('not_found', { humanMessage: 'There is no saved card with this id for your wallet' });
    if (!customer) throw notOurs();
    let pm: Stripe.PaymentMethod;
    try {
      pm = await processor.client.paymentMethods.retrieve(pmId);
    } catch (error) {
      if (error instanceof Stripe.errors.StripeInvalidRequestError && error.statusCode === 404) throw notOurs();
      throw processorUnavailable(error);
    }
    const owner = typeof pm.customer === 'string' ? pm.customer : (pm.customer?.id ?? null);
    if (owner !== customer.processor_customer_id) throw notOurs();
    return { processor, payer, customer, pm };
  }

  async removePaymentMethod(user: User, pmId: string): Promise<void> {
    const { processor, payer, customer, pm } = await this.ownedMethod(user, pmId);
    await this.callProcessor(() => processor.client.paymentMethods.detach(pm.id));
    if (customer.default_payment_method_id === pm.id) {
      await setLocalDefault(this.deps.knex, payer.payerId, null);
      // Automatic top-up has nothing to charge any more: paused until a card is chosen again.
      await this.deps
        .knex('billing_auto_topup')
        .where({ payer_id: payer.payerId, enabled: true })
        .whereNull('paused_reason')
        .update({ paused_reason: 'no_payment_method', updated_at: this.now });
    }
    await this.carry([
      {
        kind: 'activity',
        entry: {
          userId: user.id,
          kind: 'payment_method_removed',
          summary: `Removed the ${pm.card?.brand ?? 'card'} ending ${pm.card?.last4 ?? '????'}`,
        },
      },
    ]);
  }

  async setDefaultPaymentMethod(user: User, pmId: string): Promise<void> {
    const { processor, payer, customer, pm } = await this.ownedMethod(user, pmId);
    await this.callProcessor(() =>
      processor.client.customers.update(customer.processor_customer_id, { invoice_settings: { default_payment_method: pm.id } }),
    );
    await setLocalDefault(this.deps.knex, payer.payerId, pm.id);
  }

  /** The payment history the caller may see: all of a payer they manage, else their own. */
  async payments(user: User, page: { limit: number; before?: number }) {
    const payer = await this.payerOf(user);
    const manages = await this.mayManage(user, payer.payerId);
    const result = await listPayments(this.deps.knex, { payerId: payer.payerId, ...(manages ? {} : { userId: user.id }) }, page);
    return { payer, ...result };
  }

  /** The payer the caller manages (their effective payer), else 403 saying who does. */
  async managedPayer(user: User): Promise<EffectivePayer> {
    const payer = await this.payerOf(user);
    if (!(await this.mayManage(user, payer.payerId)))
      throw new ApiError('forbidden', {
        humanMessage: `Your usage is paid by ${payer.payerId} (your organisation's billing user); only they or an organisation administrator manage its cards and automatic top-up`,
      });
    return payer;
  }

  /**
   * A webhook delivery: the signature is checked over the raw bytes with the library's
   * constructEvent (bad or missing → 400, nothing written), then the event is applied once.
   */
  async receiveWebhook(rawBody: Buffer, signature: string | undefined): Promise<EventResult> {
    const processor = this.processor();
    let event: Stripe.Event;
    try {
      if (!signature) throw new Error('no Stripe-Signature header');
      event = processor.client.webhooks.constructEvent(rawBody, signature, processor.config.webhookSecret);
    } catch (error) {
      throw new ApiError('invalid_request', {
        status: 400,
        humanMessage: 'The webhook signature is missing or does not match this endpoint’s signing secret; nothing was processed',
        cause: error,
      });
    }
    const result = await applyProcessorEvent(this.deps.knex, event, this.now, async (intentId) => {
      try {
        return (await processor.client.paymentIntents.retrieve(intentId)).metadata;
      } catch (error) {
        if (error instanceof Stripe.errors.StripeInvalidRequestError && (error.statusCode === 404 || error.code === 'resource_missing'))
          return undefined;
        // Not recorded: answered 503, so the processor delivers the event again later.
        throw processorUnavailable(error);
      }
    });
    if (result.outcome === 'mismatch')
      this.deps.logger.error({ event: event.id, detail: result.detail }, 'processor event does not match its payment; not credited');
    await this.afterCommit(result.entryIds, result.followUps);
    return result;
  }

  /** Applies committed ledger entries to the gateway's mirror and carries out follow-ups. */
  async afterCommit(entryIds: readonly number[], followUps: readonly FollowUp[]): Promise<void> {
    try {
      await applyMirrorOutbox(this.deps.knex, this.deps.store, { entryIds });
    } catch (error) {
      // Left in the outbox: the sweep applies it (once) when the store answers again.
      this.deps.logger.warn({ err: error }, 'wallet mirror not updated yet; the outbox sweep will apply it');
    }
    await this.carry(followUps);
  }

  private async carry(followUps: readonly FollowUp[]): Promise<void> {
    for (const followUp of followUps) {
      try {
        if (followUp.kind === 'activity') await this.deps.carrier.activity(followUp.entry);
        else if (followUp.kind === 'email') await this.deps.carrier.email(followUp.userId, followUp);
        else await this.cardSaved(followUp.payerId, followUp.setupIntentId);
      } catch (error) {
        this.deps.logger.warn({ err: error, followUp: followUp.kind }, 'billing follow-up not carried out');
      }
    }
  }

  /** A card saved through hosted setup becomes the default when the payer has none. */
  private async cardSaved(payerId: string, setupIntentId: string): Promise<void> {
    const processor = this.processor();
    const customer = await findCustomer(this.deps.knex, payerId);
    if (!customer || customer.default_payment_method_id) return;
    const intent = await processor.client.setupIntents.retrieve(setupIntentId);
    const pm = typeof intent.payment_method === 'string' ? intent.payment_method : intent.payment_method?.id;
    if (!pm) return;
    await processor.client.customers.update(customer.processor_customer_id, { invoice_settings: { default_payment_method: pm } });
    await setLocalDefault(this.deps.knex, payerId, pm);
    // A pause for want of a card ends when one is there.
    await this.deps
      .knex('billing_auto_topup')
      .where({ payer_id: payerId, paused_reason: 'no_payment_method' })
      .update({ paused_reason: null });
  }

  /** Runs a processor call; its failures become `503 billing_unavailable`. */
  private async callProcessor<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      if (error instanceof ApiError) throw error;
      throw processorUnavailable(error);
    }
  }

  /** Balance and latest ledger entries of a payer, for the billing page. */
  async statement(payerId: string, limit: number) {
    const { knex } = this.deps;
    return knex.transaction(
      async (trx) => {
        const total = (await trx('wallet_entries')
          .where({ payer_id: payerId })
          .sum({ total: trx.raw('coalesce(amount_nano, amount_micro * 1000)') })
          .first()) as { total: string | number | null } | undefined;
        const rows = (await trx('wallet_entries').where({ payer_id: payerId }).orderBy('id', 'desc').limit(limit)) as {
          id: string | number;
          amount_nano: string | number | null;
          amount_micro: string | number;
          kind: string;
          reason: string;
          request_id: string | null;
          reference: string | null;
          created_at: Date;
        }[];
        return {
          balanceUsd: Number(total?.total ?? 0) / nanoPerUsd,
          entries: rows.map((r) => ({
            id: String(r.id),
            amount_usd: (r.amount_nano === null ? Number(r.amount_micro) * 1000 : Number(r.amount_nano)) / nanoPerUsd,
            kind: r.kind,
            reason: r.reason,
            request_id: r.request_id,
            reference: r.reference,
            created: new Date(r.created_at).toISOString(),
          })),
        };
      },
      { isolationLevel: 'repeatable read' },
    );
  }

  /** Daily spend (request debits) of a payer over the last `days` days, oldest first, USD. */
  async dailySpend(payerId: string, days: number): Promise<{ day: string; usd: number }[]> {
    const now = this.now;
    const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() - days + 1));
    const rows = (await this.deps
      .knex('wallet_entries')
      .where({ payer_id: payerId, reason: 'request' })
      .andWhere('created_at', '>=', start)
      .select(this.deps.knex.raw("to_char(created_at at time zone 'UTC', 'YYYY-MM-DD') as day"))
      .sum({ total: this.deps.knex.raw('coalesce(amount_nano, amount_micro * 1000)') })
      .groupByRaw('1')) as { day: string; total: string | number }[];
    const byDay = new Map(rows.map((r) => [r.day, -Number(r.total) / nanoPerUsd]));
    return Array.from({ length: days }, (_, i) => {
      const day = new Date(start.getTime() + i * 86_400_000).toISOString().slice(0, 10);
      return { day, usd: byDay.get(day) ?? 0 };
    });
  }
}
