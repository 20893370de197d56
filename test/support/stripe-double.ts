// A double of the payment processor's HTTP API for tests: the local test processor
// (deploy/local/payment-processor — the same code `npm start` may run, so the demo and the
// tests exercise one implementation), plus what tests need around it: the portal settings that
// point the official `stripe` library at it, signed and forged webhook deliveries built with the
// library's own signing helper, and paying on its hosted page as a browser would.
//
// It checks the request shapes the portal sends (integer cents, `usd`, the mode, the metadata
// tying a payment to its payer, our own idempotency keys on creates); a bad shape is refused with
// the processor's 400 and listed in `violations`, which tests expect to stay empty.
import Stripe from 'stripe';
import { LocalTestProcessor, type LocalTestProcessorOptions, type ProcessorEvent } from '../../deploy/local/payment-processor/index.js';

export { LocalTestProcessor, defaultEnabledEvents, type ProcessorEvent } from '../../deploy/local/payment-processor/index.js';

/** The double plus test helpers. */
export class StripeDouble extends LocalTestProcessor {
  /** Environment for a portal using this double (STRIPE_* and SVC_STRIPE_API_URL). */
  portalSettings(): Record<string, string> {
    return {
      STRIPE_SECRET_KEY: this.secretKey,
      STRIPE_PUBLISHABLE_KEY: this.publishableKey,
      STRIPE_WEBHOOK_SECRET: this.webhookSecret,
      SVC_STRIPE_API_URL: this.url,
    };
  }

  /**
   * POSTs `event` to `url` as the processor would, signed with `secret` (default: the endpoint's
   * own) by the library's generateTestHeaderString; `signature: null` sends none.
   */
  async post(url: string, event: ProcessorEvent | string, options: { secret?: string; signature?: string | null } = {}): Promise<Response> {
    const payload = typeof event === 'string' ? event : JSON.stringify(event);
    const signature =
      options.signature === null
        ? undefined
        : (options.signature ?? Stripe.webhooks.generateTestHeaderString({ payload, secret: options.secret ?? this.webhookSecret }));
    return fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(signature !== undefined && { 'stripe-signature': signature }) },
      body: payload,
    });
  }

  /** Pays (or saves a card) on this double's hosted page: see payOnHostedPage. */
  payOnHostedPage(hostedUrl: string, card?: string): Promise<{ redirect: string } | { refused: string }> {
    return payOnHostedPage(hostedUrl, card);
  }

  /** The API requests received for `path` (e.g. `/v1/checkout/sessions`), oldest first. */
  requestsTo(method: string, path: string) {
    return this.requests.filter((r) => r.method === method && r.path === path);
  }
}

/** Starts a double on loopback; `webhookUrl` may be set later (setWebhookUrl). */
export async function startStripeDouble(options: LocalTestProcessorOptions = {}): Promise<StripeDouble> {
  return new StripeDouble(options).start();
}

/**
 * Pays (or saves a card) on the hosted page at `hostedUrl` with `card` the way a browser does:
 * loads the page, submits its form. Returns where the page sends the browser next, or the
 * refusal shown on the page. Works for any running local test processor (`npm start`'s too).
 */
export async function payOnHostedPage(
  hostedUrl: string,
  card = '4242 4242 4242 4242',
): Promise<{ redirect: string } | { refused: string }> {
  const page = await fetch(hostedUrl);
  const html = await page.text();
  if (page.status !== 200) throw new Error(`hosted page answered ${page.status}: ${html.slice(0, 200)}`);
  const res = await fetch(hostedUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ card_number: card, expiry: '12 / 34', cvc: '123', name: 'Test Payer' }),
    redirect: 'manual',
  });
  if (res.status === 303) return { redirect: res.headers.get('location')! };
  const refusal = /<p class="error" role="alert">([^<]*)<\/p>/.exec(await res.text())?.[1];
  return { refused: refusal ?? `status ${res.status}` };
}
