// The billing settings (docs/billing.md "Settings"), part of the portal's environment. Card
// payments are on when STRIPE_SECRET_KEY is set; the publishable key and the webhook secret
// must then be set too, so a half-configured processor is a start-up error rather than a
// checkout that can never be credited.
import { z } from 'zod';

const optional = z
  .string()
  .trim()
  .transform((v) => (v === '' ? undefined : v))
  .optional();

const usd = (fallback: number) => z.coerce.number().positive().max(1_000_000).default(fallback);

/** The billing variables, spread into the portal's settings schema. */
export const billingSettingsShape = {
  /** Secret API key of the processor (`sk_live_…`, `sk_test_…`); unset = card payments off. */
  STRIPE_SECRET_KEY: optional,
  /** Publishable key (`pk_…`) given to the billing page. */
  STRIPE_PUBLISHABLE_KEY: optional,
  /** Signing secret of the webhook endpoint registered with the processor (`whsec_…`). */
  STRIPE_WEBHOOK_SECRET: optional,
  /**
   * Sends the processor library's requests to another base URL (stripe-mock, a test double);
   * unset = the processor itself. Only scheme, host and port are used.
   */
  SVC_STRIPE_API_URL: optional.pipe(z.url({ protocol: /^https?$/ }).optional()),
  /** Smallest and largest wallet credit one checkout may buy (USD, net of fees). */
  SVC_BILLING_MIN_TOPUP_USD: usd(5),
  SVC_BILLING_MAX_TOPUP_USD: usd(10_000),
  /**
   * The card fee passed on to the payer (gross-up): percentage in basis points (290 = 2.9 %)
   * and a fixed part in cents. Both 0: the platform absorbs the fee.
   */
  SVC_BILLING_FEE_BPS: z.coerce.number().int().min(0).max(2_000).default(290),
  SVC_BILLING_FEE_FIXED_CENTS: z.coerce.number().int().min(0).max(1_000).default(30),
  /** How often the auto top-up watcher compares balances with thresholds (ms). */
  SVC_AUTO_TOPUP_CHECK_MS: z.coerce.number().int().min(100).max(600_000).default(1_000),
};

/** The billing settings as parsed. */
export type BillingSettings = z.infer<z.ZodObject<typeof billingSettingsShape>>;
