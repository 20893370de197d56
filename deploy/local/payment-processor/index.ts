// A local stand-in for the payment processor's HTTP API: the endpoints the portal uses
// (customers, checkout sessions in payment and setup mode with a hosted page, payment methods,
// off-session payment intents, refunds), the processor's test cards, and signed webhook
// deliveries made with the official library's own signing helper.
//
// Two users: the test suites (test/support/stripe-double.ts), which also read what it received
// and the shape violations it found; and `npm start` with no processor keys in its environment,
// which runs it and hands the portal its test keys and SVC_STRIPE_API_URL, so a newcomer can walk
// a top-up through. It lives with the launcher, not in core/ or portal/: no deployable can start
// it, and the portal only ever sees an ordinary processor configuration in test mode.
//
// Request shapes are checked as the portal must send them — amounts in integer cents, currency
// `usd`, the mode, the metadata that ties a payment to its payer, and our own idempotency keys on
// every create — and a violation is refused with the processor's error shape and recorded.
import { chmodSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import Stripe from 'stripe';
import { leaf, parseParams, stringMap, type Params } from './form-params.js';
import { closedPageHtml, hostedPageHtml } from './hosted-page.js';
import {
  objectId,
  publicPaymentMethod,
  publicSession,
  testCards,
  type CardBehaviour,
  type Charge,
  type CheckoutSession,
  type Customer,
  type PaymentIntent,
  type PaymentMethod,
  type ProcessorEvent,
  type Refund,
} from './objects.js';

export * from './objects.js';
export { parseParams } from './form-params.js';

/** The event types a webhook endpoint is registered for by default (docs/billing.md). */
export const defaultEnabledEvents = [
  'checkout.session.completed',
  'checkout.session.expired',
  'charge.refunded',
  // A refund that later fails: both report it (the portal applies it once, by the refund's id).
  'charge.refund.updated',
  'refund.failed',
  'payment_intent.payment_failed',
  'payment_intent.succeeded',
];

/**
 * What the next off-session payment intents do instead of following their card (tests): answer
 * `processing` (settled later by settleProcessing), charge and then answer 500 (as the processor
 * may; the 500 is what a retry under the same key replays), or refuse as an invalid request.
 */
export type IntentOutcome = 'processing' | 'server_error_after_charge' | 'invalid_request';

/** One API request as received. */
export interface RecordedRequest {
  method: string;
  path: string;
  params: Params;
  idempotencyKey: string | undefined;
  status: number;
}

/** One webhook delivery attempt. */
export interface Delivery {
  eventId: string;
  type: string;
  status: number;
}

export interface LocalTestProcessorOptions {
  host?: string;
  port?: number;
  secretKey?: string;
  publishableKey?: string;
  webhookSecret?: string;
  /** Where events are POSTed; may be set later with setWebhookUrl. */
  webhookUrl?: string;
  /** Event types delivered (others are generated but not sent). */
  enabledEvents?: string[];
  /**
   * A file the processor keeps its customers, cards, sessions, payments and refunds in, read at
   * start and rewritten after each change: `npm start` keeps its data across restarts, so the
   * customer ids the portal stored must still name something. Unset: memory only (tests).
   */
  stateFile?: string;
  /**
   * How often open checkout sessions past their `expires_at` are expired (each with its
   * `checkout.session.expired` event), as the processor's hosted pages time out. Default one
   * minute; 0: only when `expireDueSessions` is called (tests).
   */
  expirySweepMs?: number;
}

/** The processor's records, as kept in `stateFile`. */
const persistedMaps = [
  'customers',
  'paymentMethods',
  'sessions',
  'paymentIntents',
  'charges',
  'refunds',
  'setupMethods',
  // A retry after a restart with the same key gets the first answer, not a second customer.
  'idempotency',
] as const;

class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly body: Record<string, unknown>,
  ) {
    super(String(body.message));
  }
}

const invalid = (message: string, param?: string) =>
  new ApiFailure(400, { type: 'invalid_request_error', message, ...(param && { param }) });

/** Our own idempotency keys on creates: the library's generated retry keys do not count. */
const createPaths = new Set(['/v1/customers', '/v1/checkout/sessions', '/v1/payment_intents']);

const now = () => Math.floor(Date.now() / 1000);

/** The local test processor; `start()` listens, `close()` stops and waits for deliveries. */
export class LocalTestProcessor {
  readonly secretKey: string;
  readonly publishableKey: string;
  readonly webhookSecret: string;
  readonly requests: RecordedRequest[] = [];
  /** Shape problems found in requests (each also refused with 400). */
  readonly violations: string[] = [];
  readonly deliveries: Delivery[] = [];
  readonly events: ProcessorEvent[] = [];
  readonly customers = new Map<string, Customer>();
  readonly paymentMethods = new Map<string, PaymentMethod>();
  readonly sessions = new Map<string, CheckoutSession>();
  readonly paymentIntents = new Map<string, PaymentIntent>();
  readonly charges = new Map<string, Charge>();
  readonly refunds = new Map<string, Refund>();
  readonly idempotency = new Map<string, { fingerprint: string; status: number; body: unknown }>();
  /** Outcomes the next new payment intents take, first first (tests; see IntentOutcome). */
  readonly nextIntentOutcomes: IntentOutcome[] = [];
  private readonly pendingDeliveries = new Set<Promise<unknown>>();
  private readonly enabledEvents: Set<string>;
  /** While true, every API request is answered 503 (a processor outage, for tests); hosted pages still work. */
  apiUnavailable = false;
  private readonly server: Server;
  private webhookUrl: string | undefined;
  private expirySweep: NodeJS.Timeout | undefined;
  url = '';

  constructor(private readonly options: LocalTestProcessorOptions = {}) {
    this.secretKey = options.secretKey ?? `sk_test_local_${randomBytes(12).toString('hex')}`;
    this.publishableKey = options.publishableKey ?? `pk_test_local_${randomBytes(12).toString('hex')}`;
    this.webhookSecret = options.webhookSecret ?? `whsec_local_${randomBytes(16).toString('hex')}`;
    this.webhookUrl = options.webhookUrl;
    this.enabledEvents = new Set(options.enabledEvents ?? defaultEnabledEvents);
    this.load();
    this.server = createServer((req, res) => {
      this.handle(req, res)
        .catch((error: unknown) => {
          if (!res.headersSent) this.sendJson(res, 500, { error: { type: 'api_error', message: String(error) } });
        })
        // Whatever the answer: a handler that changed something and then failed changed it all the same.
        .finally(() => {
          if (req.method !== 'GET') this.save();
        });
    });
  }

  /** The records of an earlier run (stateFile), if any. A file that cannot be read starts empty, said on stderr. */
  private load(): void {
    const file = this.options.stateFile;
    if (file === undefined || !existsSync(file)) return;
    try {
      const state = JSON.parse(readFileSync(file, 'utf8')) as Record<string, [string, unknown][]>;
      for (const name of persistedMaps) for (const [id, value] of state[name] ?? []) (this[name] as Map<string, unknown>).set(id, value);
    } catch (error) {
      process.stderr.write(`local test processor: ${file} could not be read (${String(error)}); starting without its records\n`);
    }
  }

  /** Writes the records to stateFile (a whole new file, renamed over the old: never half written); a failure is said on stderr. */
  private save(): void {
    const file = this.options.stateFile;
    if (file === undefined) return;
    try {
      const state = Object.fromEntries(persistedMaps.map((name) => [name, [...this[name].entries()]]));
      // Customers' emails and card details: readable by the owner only, as local-credentials.json is.
      writeFileSync(`${file}.tmp`, JSON.stringify(state), { mode: 0o600 });
      chmodSync(`${file}.tmp`, 0o600); // the mode above applies only when the file is created
      renameSync(`${file}.tmp`, file);
    } catch (error) {
      process.stderr.write(`local test processor: ${file} could not be written (${String(error)}); its records live in memory only\n`);
    }
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.options.port ?? 0, this.options.host ?? '127.0.0.1', () => resolve());
    });
    const { port } = this.server.address() as AddressInfo;
    this.url = `http://${this.options.host ?? '127.0.0.1'}:${port}`;
    const sweepMs = this.options.expirySweepMs ?? 60_000;
    if (sweepMs > 0) {
      // Sessions that timed out while the processor was stopped expire as soon as their events
      // have somewhere to go (now, or when setWebhookUrl is called), the rest as they come due.
      if (this.webhookUrl) this.expireDueSessions();
      this.expirySweep = setInterval(() => {
        if (this.webhookUrl) this.expireDueSessions();
      }, sweepMs).unref();
    }
    return this;
  }

  /**
   * Expires every open session whose `expires_at` is at or before `at` (seconds), with its event,
   * as the processor does when a hosted page times out unpaid: an abandoned top-up does not stay
   * pending in the portal. Answers the sessions expired.
   */
  expireDueSessions(at = now()): CheckoutSession[] {
    const due = [...this.sessions.values()].filter((session) => session.status === 'open' && session.expires_at <= at);
    for (const session of due) this.expire(session);
    if (due.length > 0) this.save();
    return due;
  }

  private expire(session: CheckoutSession): void {
    session.status = 'expired';
    session.url = null;
    void this.emit('checkout.session.expired', publicSession(session));
  }

  /** Where events go from now on; sessions that came due before there was anywhere expire now. */
  setWebhookUrl(url: string): void {
    this.webhookUrl = url;
    if (this.expirySweep !== undefined) this.expireDueSessions();
  }

  /** Waits for deliveries in flight, then stops listening. */
  async close(): Promise<void> {
    clearInterval(this.expirySweep);
    await this.settled();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Resolves when every webhook delivery started so far has finished. */
  async settled(): Promise<void> {
    while (this.pendingDeliveries.size > 0) await Promise.allSettled([...this.pendingDeliveries]);
  }

  /** The event the processor would send for `object`. */
  buildEvent(type: string, object: unknown): ProcessorEvent {
    return {
      id: objectId('evt'),
      object: 'event',
      api_version: Stripe.API_VERSION,
      created: now(),
      data: { object },
      livemode: false,
      pending_webhooks: 1,
      request: { id: null, idempotency_key: null },
      type,
    };
  }

  /** Signs `payload` as the processor does (the library's own test helper). */
  signatureFor(payload: string, secret = this.webhookSecret): string {
    return Stripe.webhooks.generateTestHeaderString({ payload, secret });
  }

  /** Sends `event` to the webhook endpoint, signed; the answer's status (0 = unreachable). */
  async deliver(event: ProcessorEvent): Promise<number> {
    if (!this.webhookUrl) return 0;
    const payload = JSON.stringify(event, null, 2);
    let status = 0;
    // The processor retries failed deliveries for days; here a few quick attempts suffice.
    for (let attempt = 0; attempt < 3 && (status === 0 || status >= 500); attempt++) {
      if (attempt > 0) await new Promise((r) => setTimeout(r, 200 * attempt));
      try {
        const res = await fetch(this.webhookUrl, {
          method: 'POST',
          headers: { 'content-type': 'application/json; charset=utf-8', 'stripe-signature': this.signatureFor(payload) },
          body: payload,
        });
        await res.arrayBuffer();
        status = res.status;
      } catch {
        status = 0;
      }
    }
    this.deliveries.push({ eventId: event.id, type: event.type, status });
    return status;
  }

  /** Records an event and, when its type is enabled, delivers it; resolves with the delivery's status. */
  emit(type: string, object: unknown): Promise<number> {
    const event = this.buildEvent(type, structuredClone(object));
    this.events.push(event);
    if (!this.enabledEvents.has(type)) return Promise.resolve(-1);
    const delivery = this.deliver(event);
    this.pendingDeliveries.add(delivery);
    void delivery.finally(() => this.pendingDeliveries.delete(delivery));
    return delivery;
  }

  /**
   * Refunds `amountCents` (all that is left when undefined) of a charge, as the dashboard or the
   * API would; emits `charge.refunded` with the charge's cumulative `amount_refunded`.
   */
  refund(chargeOrIntentId: string, amountCents?: number): Refund {
    const charge = chargeOrIntentId.startsWith('pi_')
      ? this.charges.get(this.paymentIntents.get(chargeOrIntentId)?.latest_charge ?? '')
      : this.charges.get(chargeOrIntentId);
    if (!charge) throw invalid(`No such charge: '${chargeOrIntentId}'`, 'charge');
    const left = charge.amount - charge.amount_refunded;
    const amount = amountCents ?? left;
    if (!Number.isInteger(amount) || amount <= 0 || amount > left)
      throw invalid(`Refund amount (${amount}) is greater than unrefunded amount on charge (${left})`, 'amount');
    charge.amount_refunded += amount;
    charge.refunded = charge.amount_refunded === charge.amount;
    const refund: Refund = {
      id: objectId('re'),
      object: 'refund',
      amount,
      charge: charge.id,
      payment_intent: charge.payment_intent,
      currency: charge.currency,
      status: 'succeeded',
      created: now(),
    };
    this.refunds.set(refund.id, refund);
    void this.emit('charge.refunded', charge);
    return refund;
  }

  /**
   * The bank could not pay refund `refundId` back (the card was closed, say), as happens days after
   * a refund: the refund becomes `failed`, its amount is no longer refunded on the charge, and
   * `charge.refund.updated` and `refund.failed` report it.
   */
  failRefund(refundId: string, reason = 'expired_or_canceled_card'): Refund {
    const refund = this.refunds.get(refundId);
    if (!refund) throw invalid(`No such refund: '${refundId}'`, 'refund');
    if (refund.status === 'failed') return refund;
    const charge = this.charges.get(refund.charge);
    if (charge) {
      charge.amount_refunded -= refund.amount;
      charge.refunded = false;
    }
    refund.status = 'failed';
    refund.failure_reason = reason;
    void this.emit('charge.refund.updated', refund);
    void this.emit('refund.failed', refund);
    return refund;
  }

  /**
   * What the hosted page does with a card: completes the session (payment: a payment intent and
   * a charge; setup: a saved payment method), emits `checkout.session.completed` and waits for
   * its delivery, and returns where the browser goes next — or the refusal for a declined card
   * (after emitting `payment_intent.payment_failed`).
   */
  async completeCheckout(sessionId: string, cardNumber: string, name = 'Test Payer'): Promise<{ redirect: string } | { error: string }> {
    const session = this.sessions.get(sessionId);
    if (!session || session.status !== 'open') return { error: 'This checkout is no longer open.' };
    const card = testCards[cardNumber.replace(/[\s-]/g, '')];
    if (!card) return { error: 'Your card number is invalid. Use one of the test cards listed below.' };
    const behaviour = card.behaviour;
    if (session.mode === 'setup') {
      if (behaviour.kind === 'declined') return { error: behaviour.message };
      const pm = this.newPaymentMethod(cardNumber, card.brand, behaviour, name);
      pm.customer = session.customer;
      session.setup_intent = objectId('seti');
      session.status = 'complete';
      session.payment_status = 'no_payment_required';
      session.url = null;
      // The portal learns the saved method from the session's setup intent; it is kept here.
      session.metadata = { ...session.metadata };
      this.setupMethods.set(session.setup_intent, pm.id);
      await this.emit('checkout.session.completed', { ...publicSession(session), setup_intent: session.setup_intent });
      return { redirect: session.success_url.replace('{CHECKOUT_SESSION_ID}', session.id) };
    }
    const intent = this.newPaymentIntent(session.amount_total ?? 0, session.customer, session.payment_intent_metadata);
    session.payment_intent = intent.id;
    if (behaviour.kind === 'declined') {
      intent.last_payment_error = {
        type: 'card_error',
        code: behaviour.code,
        decline_code: behaviour.declineCode,
        message: behaviour.message,
      };
      await this.emit('payment_intent.payment_failed', intent);
      return { error: behaviour.message };
    }
    const pm = this.newPaymentMethod(cardNumber, card.brand, behaviour, name);
    this.succeed(intent, pm.id);
    session.status = 'complete';
    session.payment_status = 'paid';
    session.url = null;
    await this.emit('checkout.session.completed', publicSession(session));
    return { redirect: session.success_url.replace('{CHECKOUT_SESSION_ID}', session.id) };
  }

  /** Setup intent id → the payment method it saved. */
  readonly setupMethods = new Map<string, string>();

  private newPaymentMethod(cardNumber: string, brand: string, behaviour: CardBehaviour, name: string): PaymentMethod {
    const digits = cardNumber.replace(/[\s-]/g, '');
    const pm: PaymentMethod = {
      id: objectId('pm'),
      object: 'payment_method',
      type: 'card',
      card: { brand, last4: digits.slice(-4), exp_month: 12, exp_year: new Date().getUTCFullYear() + 8, funding: 'credit', country: 'US' },
      customer: null,
      billing_details: { name, email: null },
      metadata: {},
      created: now(),
      livemode: false,
      behaviour,
    };
    this.paymentMethods.set(pm.id, pm);
    return pm;
  }

  /** A `processing` payment intent goes through now (its charge, `payment_intent.succeeded`). */
  settleProcessing(intentId: string): PaymentIntent {
    const intent = this.paymentIntents.get(intentId);
    if (!intent || intent.status !== 'processing' || !intent.payment_method) throw new Error(`no processing payment intent ${intentId}`);
    this.succeed(intent, intent.payment_method);
    return intent;
  }

  private newPaymentIntent(amount: number, customer: string | null, metadata: Record<string, string>): PaymentIntent {
    const intent: PaymentIntent = {
      id: objectId('pi'),
      object: 'payment_intent',
      amount,
      amount_received: 0,
      currency: 'usd',
      customer,
      payment_method: null,
      status: 'requires_payment_method',
      metadata: { ...metadata },
      latest_charge: null,
      last_payment_error: null,
      created: now(),
      livemode: false,
    };
    this.paymentIntents.set(intent.id, intent);
    return intent;
  }

  private succeed(intent: PaymentIntent, paymentMethodId: string): void {
    const charge: Charge = {
      id: objectId('ch'),
      object: 'charge',
      amount: intent.amount,
      amount_captured: intent.amount,
      amount_refunded: 0,
      refunded: false,
      paid: true,
      status: 'succeeded',
      currency: intent.currency,
      customer: intent.customer,
      payment_intent: intent.id,
      payment_method: paymentMethodId,
      metadata: { ...intent.metadata },
      created: now(),
      livemode: false,
    };
    this.charges.set(charge.id, charge);
    intent.status = 'succeeded';
    intent.amount_received = intent.amount;
    intent.payment_method = paymentMethodId;
    intent.latest_charge = charge.id;
    intent.last_payment_error = null;
    void this.emit('payment_intent.succeeded', intent);
  }

  /* ---------------------------------------------------------------- HTTP */

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://local');
    const body = await readBody(req);
    // Browsers ask every page's origin for an icon: none, rather than the API's 401 in the console.
    if (url.pathname === '/favicon.ico') return void res.writeHead(204).end();
    if (url.pathname.startsWith('/pay/')) return this.hostedPage(req.method ?? 'GET', decodeURIComponent(url.pathname.slice(5)), body, res);
    const params = req.method === 'GET' || req.method === 'DELETE' ? parseParams(url.search.slice(1)) : parseParams(body);
    const idempotencyKey = header(req, 'idempotency-key');
    const record: RecordedRequest = { method: req.method ?? 'GET', path: url.pathname, params, idempotencyKey, status: 0 };
    this.requests.push(record);
    const respond = (status: number, payload: unknown, replayed = false) => {
      record.status = status;
      this.sendJson(res, status, payload, replayed ? { 'idempotent-replayed': 'true' } : {});
    };
    // An outage (tests): the API answers as the processor does when it is down, nothing done.
    if (this.apiUnavailable)
      return respond(503, { error: { type: 'api_error', message: 'The processor is unavailable (local test outage)' } });
    try {
      this.checkCommonShape(req, record);
      const fingerprint = `${record.method} ${record.path} ${JSON.stringify(params)}`;
      if (record.method === 'POST' && idempotencyKey) {
        const seen = this.idempotency.get(idempotencyKey);
        if (seen) {
          if (seen.fingerprint !== fingerprint)
            throw new ApiFailure(400, {
              type: 'idempotency_error',
              message: `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${idempotencyKey}' if you meant to execute a different request.`,
            });
          return respond(seen.status, seen.body, true);
        }
      }
      let status = 200;
      let payload: unknown;
      try {
        payload = this.route(record.method, url.pathname, params);
      } catch (error) {
        if (!(error instanceof ApiFailure)) throw error;
        // The processor stores failures of a keyed request too, a 500 included once the request
        // started executing (a retry gets the same answer).
        status = error.status;
        payload = { error: error.body };
      }
      if (record.method === 'POST' && idempotencyKey) this.idempotency.set(idempotencyKey, { fingerprint, status, body: payload });
      return respond(status, payload);
    } catch (error) {
      if (error instanceof ApiFailure) return respond(error.status, { error: error.body });
      throw error;
    }
  }

  private checkCommonShape(req: IncomingMessage, record: RecordedRequest): void {
    const auth = header(req, 'authorization');
    if (auth !== `Bearer ${this.secretKey}`)
      throw new ApiFailure(401, { type: 'invalid_request_error', message: 'Invalid API Key provided.' });
    if (!header(req, 'stripe-version')) this.violate(`${record.method} ${record.path}: no Stripe-Version header`);
    if (record.method === 'POST' && !/^application\/x-www-form-urlencoded/.test(header(req, 'content-type') ?? ''))
      this.violate(`${record.method} ${record.path}: body is not form-encoded`);
    if (record.method === 'POST' && createPaths.has(record.path)) {
      const key = record.idempotencyKey;
      if (!key || key.startsWith('stripe-node-retry-'))
        this.violate(`${record.method} ${record.path}: no idempotency key of the caller's own (got ${key ?? 'none'})`);
    }
  }

  /** Records a shape violation and refuses the request. */
  private violate(message: string, param?: string): never {
    this.violations.push(message);
    throw invalid(message, param);
  }

  private route(method: string, path: string, params: Params): unknown {
    const parts = path.split('/').filter(Boolean);
    if (parts[0] !== 'v1')
      throw new ApiFailure(404, { type: 'invalid_request_error', message: `Unrecognized request URL (${method}: ${path})` });
    const [, resource, id, action] = parts;
    switch (`${method} ${resource}${id ? '/:id' : ''}${action ? `/${action}` : ''}`) {
      case 'POST customers':
        return this.createCustomer(params);
      case 'GET customers/:id':
        return this.customer(id!);
      case 'POST customers/:id':
        return this.updateCustomer(id!, params);
      case 'GET customers/:id/payment_methods':
        return this.list(path, this.methodsOf(id!));
      case 'GET payment_methods':
        return this.list(
          path,
          this.methodsOf(leaf(params, 'customer') ?? this.violate('GET /v1/payment_methods: no customer', 'customer')),
        );
      case 'GET payment_methods/:id':
        return publicPaymentMethod(this.paymentMethod(id!));
      case 'POST payment_methods/:id/detach': {
        const pm = this.paymentMethod(id!);
        if (!pm.customer) throw invalid(`The payment method ${pm.id} is not attached to a customer`);
        const customer = this.customers.get(pm.customer);
        if (customer?.invoice_settings.default_payment_method === pm.id) customer.invoice_settings.default_payment_method = null;
        pm.customer = null;
        return publicPaymentMethod(pm);
      }
      case 'POST refunds': {
        const target = leaf(params, 'charge') ?? leaf(params, 'payment_intent');
        if (!target) throw invalid('Provide a charge or a payment_intent', 'charge');
        const amount = leaf(params, 'amount');
        return this.refund(target, amount === undefined ? undefined : integerCents(amount, 'amount'));
      }
      case 'GET charges/:id':
        return this.charges.get(id!) ?? notFound('charge', id!);
      case 'POST payment_intents':
        return this.createPaymentIntent(params);
      case 'GET payment_intents/:id':
        return this.paymentIntents.get(id!) ?? notFound('payment_intent', id!);
      case 'GET setup_intents/:id': {
        const pm = this.setupMethods.get(id!);
        if (!pm) return notFound('setup_intent', id!);
        return {
          id,
          object: 'setup_intent',
          status: 'succeeded',
          payment_method: pm,
          customer: this.paymentMethods.get(pm)?.customer ?? null,
        };
      }
      default:
        break;
    }
    // checkout/sessions[/id[/expire]]
    if (resource === 'checkout' && id === 'sessions') {
      const sessionId = parts[3];
      const sessionAction = parts[4];
      if (method === 'POST' && !sessionId) return publicSession(this.createSession(params));
      if (method === 'GET' && sessionId && !sessionAction)
        return publicSession(this.sessions.get(sessionId) ?? notFound('checkout.session', sessionId));
      if (method === 'POST' && sessionId && sessionAction === 'expire') {
        const session = this.sessions.get(sessionId) ?? notFound('checkout.session', sessionId);
        if (session.status !== 'open') throw invalid(`Only open sessions can be expired (this one is ${session.status})`);
        this.expire(session);
        return publicSession(session);
      }
    }
    throw new ApiFailure(404, { type: 'invalid_request_error', message: `Unrecognized request URL (${method}: ${path})` });
  }

  private list(url: string, data: unknown[]): unknown {
    return { object: 'list', data, has_more: false, url };
  }

  private methodsOf(customerId: string): unknown[] {
    this.customer(customerId);
    return [...this.paymentMethods.values()]
      .filter((pm) => pm.customer === customerId)
      .sort((a, b) => b.created - a.created)
      .map(publicPaymentMethod);
  }

  private customer(id: string): Customer {
    return this.customers.get(id) ?? notFound('customer', id);
  }

  private paymentMethod(id: string): PaymentMethod {
    return this.paymentMethods.get(id) ?? notFound('payment_method', id);
  }

  private createCustomer(params: Params): Customer {
    const metadata = stringMap(params, 'metadata');
    if (!metadata.payer_id) this.violate('POST /v1/customers: metadata[payer_id] missing', 'metadata');
    const customer: Customer = {
      id: objectId('cus'),
      object: 'customer',
      email: leaf(params, 'email') ?? null,
      name: leaf(params, 'name') ?? null,
      metadata,
      invoice_settings: { default_payment_method: null },
      created: now(),
      livemode: false,
    };
    this.customers.set(customer.id, customer);
    return customer;
  }

  private updateCustomer(id: string, params: Params): Customer {
    const customer = this.customer(id);
    const pm = leaf(params, 'invoice_settings', 'default_payment_method');
    if (pm !== undefined) {
      if (pm !== '' && this.paymentMethods.get(pm)?.customer !== id)
        throw invalid(`The payment method ${pm} is not attached to customer ${id}`, 'invoice_settings[default_payment_method]');
      customer.invoice_settings.default_payment_method = pm === '' ? null : pm;
    }
    const metadata = stringMap(params, 'metadata');
    if (Object.keys(metadata).length > 0) customer.metadata = { ...customer.metadata, ...metadata };
    return customer;
  }

  private createSession(params: Params): CheckoutSession {
    const mode = leaf(params, 'mode');
    if (mode !== 'payment' && mode !== 'setup')
      this.violate(`POST /v1/checkout/sessions: mode must be payment or setup (got ${mode ?? 'none'})`, 'mode');
    const customer = leaf(params, 'customer');
    if (!customer || !this.customers.has(customer)) this.violate('POST /v1/checkout/sessions: customer missing or unknown', 'customer');
    const successUrl = leaf(params, 'success_url') ?? '';
    if (!/^https?:\/\//.test(successUrl) || !successUrl.includes('{CHECKOUT_SESSION_ID}'))
      this.violate('POST /v1/checkout/sessions: success_url must be absolute and carry {CHECKOUT_SESSION_ID}', 'success_url');
    const cancelUrl = leaf(params, 'cancel_url');
    if (!cancelUrl || !/^https?:\/\//.test(cancelUrl)) this.violate('POST /v1/checkout/sessions: cancel_url missing', 'cancel_url');
    const metadata = stringMap(params, 'metadata');
    if (!metadata.payer_id) this.violate('POST /v1/checkout/sessions: metadata[payer_id] missing', 'metadata');
    const id = objectId('cs_test');
    const base = {
      id,
      object: 'checkout.session' as const,
      mode: mode as 'payment' | 'setup',
      status: 'open' as const,
      customer: customer as string,
      client_reference_id: leaf(params, 'client_reference_id') ?? null,
      metadata,
      payment_intent: null,
      setup_intent: null,
      success_url: successUrl,
      cancel_url: cancelUrl as string,
      url: `${this.url}/pay/${id}`,
      created: now(),
      expires_at: this.sessionExpiry(params),
      livemode: false as const,
    };
    let session: CheckoutSession;
    if (mode === 'setup') {
      if (leaf(params, 'currency') !== 'usd') this.violate('POST /v1/checkout/sessions: setup mode needs currency usd', 'currency');
      if (params.line_items !== undefined) this.violate('POST /v1/checkout/sessions: setup mode takes no line_items', 'line_items');
      session = {
        ...base,
        payment_status: 'no_payment_required',
        amount_subtotal: null,
        amount_total: null,
        currency: 'usd',
        line_items: [],
        payment_intent_metadata: {},
      };
    } else {
      const items = Array.isArray(params.line_items) ? params.line_items : [];
      if (items.length === 0) this.violate('POST /v1/checkout/sessions: payment mode needs line_items', 'line_items');
      const lineItems = items.map((_, i) => {
        const at = `line_items[${i}]`;
        if (leaf(params, 'line_items', i, 'price_data', 'currency') !== 'usd') this.violate(`${at}[price_data][currency] must be usd`, at);
        const unit = integerCents(leaf(params, 'line_items', i, 'price_data', 'unit_amount') ?? '', `${at}[price_data][unit_amount]`, this);
        const name = leaf(params, 'line_items', i, 'price_data', 'product_data', 'name');
        if (!name) this.violate(`${at}[price_data][product_data][name] missing`, at);
        if (leaf(params, 'line_items', i, 'quantity') !== '1') this.violate(`${at}[quantity] must be 1`, at);
        return { name, unit_amount: unit, quantity: 1 };
      });
      const total = lineItems.reduce((sum, item) => sum + item.unit_amount, 0);
      if (total < 50) this.violate(`POST /v1/checkout/sessions: total ${total} cents is below the 50-cent minimum`, 'line_items');
      if (total > 99_999_999) this.violate(`POST /v1/checkout/sessions: total ${total} cents is above the maximum`, 'line_items');
      const intentMetadata = stringMap((params.payment_intent_data as Params | undefined) ?? {}, 'metadata');
      if (!metadata.payment_id || intentMetadata.payment_id !== metadata.payment_id)
        this.violate(
          'POST /v1/checkout/sessions: metadata[payment_id] and payment_intent_data[metadata][payment_id] must match',
          'metadata',
        );
      // The installation the payment belongs to: its charge's events are told from another deployment's by it.
      if (intentMetadata.install_id !== metadata.install_id)
        this.violate(
          'POST /v1/checkout/sessions: metadata[install_id] and payment_intent_data[metadata][install_id] must match',
          'metadata',
        );
      session = {
        ...base,
        payment_status: 'unpaid',
        amount_subtotal: total,
        amount_total: total,
        currency: 'usd',
        line_items: lineItems,
        payment_intent_metadata: intentMetadata,
      };
    }
    this.sessions.set(id, session);
    return session;
  }

  /** A session's `expires_at`: as asked, between 30 minutes and 24 hours from now as the processor allows; else 24 hours. */
  private sessionExpiry(params: Params): number {
    const asked = leaf(params, 'expires_at');
    if (asked === undefined) return now() + 24 * 3600;
    const at = Number(asked);
    if (!/^\d+$/.test(asked) || at < now() + 1800 || at > now() + 24 * 3600)
      this.violate('POST /v1/checkout/sessions: expires_at must be 30 minutes to 24 hours from now (seconds since 1970)', 'expires_at');
    return at;
  }

  private createPaymentIntent(params: Params): PaymentIntent {
    const amount = integerCents(leaf(params, 'amount') ?? '', 'amount', this);
    if (amount < 50) this.violate(`POST /v1/payment_intents: amount ${amount} is below the 50-cent minimum`, 'amount');
    if (leaf(params, 'currency') !== 'usd') this.violate('POST /v1/payment_intents: currency must be usd', 'currency');
    const customer = leaf(params, 'customer');
    if (!customer || !this.customers.has(customer)) this.violate('POST /v1/payment_intents: customer missing or unknown', 'customer');
    const pmId = leaf(params, 'payment_method');
    const pm = pmId ? this.paymentMethods.get(pmId) : undefined;
    if (!pm || pm.customer !== customer)
      this.violate('POST /v1/payment_intents: payment_method missing or not attached to the customer', 'payment_method');
    if (leaf(params, 'confirm') !== 'true' || leaf(params, 'off_session') !== 'true')
      this.violate('POST /v1/payment_intents: an automatic charge must be confirm=true and off_session=true', 'off_session');
    const metadata = stringMap(params, 'metadata');
    if (!metadata.operation_id || !metadata.payer_id)
      this.violate('POST /v1/payment_intents: metadata[operation_id] and metadata[payer_id] are required', 'metadata');
    const forced = this.nextIntentOutcomes.shift();
    if (forced === 'invalid_request') throw invalid('This PaymentIntent cannot be created (test: refused as invalid)', 'payment_method');
    const intent = this.newPaymentIntent(amount, customer, metadata);
    intent.payment_method = pm.id;
    if (forced === 'processing') {
      intent.status = 'processing';
      return intent;
    }
    if (forced === 'server_error_after_charge') {
      this.succeed(intent, pm.id);
      throw new ApiFailure(500, { type: 'api_error', message: 'An unknown error occurred (test: after charging)' });
    }
    const behaviour = pm.behaviour ?? { kind: 'succeeds' };
    if (behaviour.kind === 'succeeds') {
      this.succeed(intent, pm.id);
      return intent;
    }
    const [code, declineCode, message] =
      behaviour.kind === 'requires_authentication'
        ? ['authentication_required', 'authentication_required', 'Your card was declined. This transaction requires authentication.']
        : behaviour.kind === 'declines_charges'
          ? ['card_declined', behaviour.declineCode, 'Your card was declined.']
          : [behaviour.code, behaviour.declineCode, behaviour.message];
    intent.last_payment_error = { type: 'card_error', code, decline_code: declineCode, message };
    void this.emit('payment_intent.payment_failed', intent);
    throw new ApiFailure(402, { type: 'card_error', code, decline_code: declineCode, message, payment_intent: structuredClone(intent) });
  }

  private hostedPage(method: string, sessionId: string, body: string, res: ServerResponse): Promise<void> | void {
    const session = this.sessions.get(sessionId);
    if (!session) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('No such checkout session');
      return;
    }
    if (session.status !== 'open') {
      res.writeHead(410, { 'content-type': 'text/html; charset=utf-8' }).end(closedPageHtml(session));
      return;
    }
    if (method !== 'POST') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' }).end(hostedPageHtml(session));
      return;
    }
    const form = new URLSearchParams(body);
    return this.completeCheckout(sessionId, form.get('card_number') ?? '', form.get('name') ?? 'Test Payer').then((outcome) => {
      if ('redirect' in outcome) res.writeHead(303, { location: outcome.redirect }).end();
      else res.writeHead(402, { 'content-type': 'text/html; charset=utf-8' }).end(hostedPageHtml(session, outcome.error));
    });
  }

  private sendJson(res: ServerResponse, status: number, payload: unknown, headers: Record<string, string> = {}): void {
    res.writeHead(status, { 'content-type': 'application/json', 'request-id': objectId('req'), ...headers }).end(JSON.stringify(payload));
  }
}

/** Starts a local test processor on loopback (port 0 = any free port). */
export async function startLocalTestProcessor(options: LocalTestProcessorOptions = {}): Promise<LocalTestProcessor> {
  return new LocalTestProcessor(options).start();
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function notFound(kind: string, id: string): never {
  throw new ApiFailure(404, { type: 'invalid_request_error', code: 'resource_missing', message: `No such ${kind}: '${id}'` });
}

/** An amount that must be a whole number of cents (the processor refuses decimals). */
function integerCents(text: string, param: string, processor?: { violations: string[] }): number {
  if (!/^\d{1,12}$/.test(text)) {
    const message = `${param} must be an integer number of cents (got '${text}')`;
    processor?.violations.push(message);
    throw invalid(message, param);
  }
  return Number(text);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > 1_000_000) throw new Error('request body too large');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
