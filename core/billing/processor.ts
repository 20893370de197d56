// The payment processor's client: the official `stripe` library, pointed at Stripe itself or,
// with SVC_STRIPE_API_URL, at another base URL (stripe-mock, the tests' double, the local test
// processor `npm start` runs). One place decides whether card payments are configured at all.
import Stripe from 'stripe';
import { ConfigError } from '../config/settings.js';
import type { BillingSettings } from './settings.js';

/** Where the processor configuration came from, shown on the billing pages. */
export type ProcessorMode = 'stripe' | 'custom_api_url';

/** A configured processor: its keys and where its API is. */
export interface ProcessorConfig {
  secretKey: string;
  publishableKey: string;
  webhookSecret: string;
  /** Base URL of the API when not Stripe's own. */
  apiUrl: string | undefined;
  mode: ProcessorMode;
  /** Test keys (`sk_test_…`): no real money moves, and every billing page says so. */
  testMode: boolean;
}

/**
 * The configuration the settings describe, or undefined when card payments are off (no secret
 * key). A secret key without the publishable key or the webhook secret is a ConfigError: a
 * checkout whose completion can never be verified must not be offered.
 */
export function processorConfigFrom(settings: BillingSettings): ProcessorConfig | undefined {
  const secretKey = settings.STRIPE_SECRET_KEY;
  if (!secretKey) {
    const stray = (['STRIPE_PUBLISHABLE_KEY', 'STRIPE_WEBHOOK_SECRET'] as const).filter((name) => settings[name]);
    if (stray.length > 0) throw new ConfigError(`invalid portal settings:\n  ${stray.join(', ')}: set without STRIPE_SECRET_KEY`);
    return undefined;
  }
  const missing = (['STRIPE_PUBLISHABLE_KEY', 'STRIPE_WEBHOOK_SECRET'] as const).filter((name) => !settings[name]);
  if (missing.length > 0)
    throw new ConfigError(`invalid portal settings:\n  ${missing.join(', ')}: required when STRIPE_SECRET_KEY is set`);
  return {
    secretKey,
    publishableKey: settings.STRIPE_PUBLISHABLE_KEY!,
    webhookSecret: settings.STRIPE_WEBHOOK_SECRET!,
    apiUrl: settings.SVC_STRIPE_API_URL,
    mode: settings.SVC_STRIPE_API_URL ? 'custom_api_url' : 'stripe',
    testMode: secretKey.startsWith('sk_test_'),
  };
}

/**
 * The library's client for `config`: API requests time out after 20 s and are retried twice
 * (the library keys every POST, and our own idempotency keys make retries safe).
 */
export function createProcessorClient(config: ProcessorConfig): Stripe {
  const target = config.apiUrl ? new URL(config.apiUrl) : undefined;
  return new Stripe(config.secretKey, {
    maxNetworkRetries: 2,
    timeout: 20_000,
    telemetry: false,
    appInfo: { name: 'svc-portal' },
    ...(target && {
      host: target.hostname,
      port: target.port || (target.protocol === 'https:' ? 443 : 80),
      protocol: target.protocol === 'https:' ? 'https' : 'http',
    }),
  });
}
