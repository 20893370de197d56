// Shared by the billing suites: a processor double, a portal pointed at it with its webhook
// registered, a gateway on the same database and store (as `npm start` runs them), and users.
import { expect } from 'vitest';
import type { PortalClient } from '../support/portal-client.js';
import { webhookPath } from '../../core/billing/index.js';
import { KeyRepository } from '../../core/keys/index.js';
import { signUp } from '../support/portal-users.js';
import { harnessSecrets, startPortalHarness, type PortalHarness } from '../support/portal-harness.js';
import { startGatewayHarness, type GatewayHarness, type HarnessOptions } from '../support/gateway-harness.js';
import { startStripeDouble, type StripeDouble } from '../support/stripe-double.js';
import type { LocalTestProcessorOptions } from '../../deploy/local/payment-processor/index.js';

export interface BillingWorld {
  double: StripeDouble;
  portal: PortalHarness;
  gateway: GatewayHarness | undefined;
  webhookUrl: string;
  close(): Promise<void>;
}

/** Double + portal (+ gateway). `settings` are extra portal settings. */
export async function startBillingWorld(
  options: {
    settings?: Record<string, string>;
    gateway?: boolean;
    gatewayOptions?: HarnessOptions;
    doubleOptions?: LocalTestProcessorOptions;
  } = {},
): Promise<BillingWorld> {
  const double = await startStripeDouble(options.doubleOptions);
  const portal = await startPortalHarness({ settings: { ...double.portalSettings(), ...options.settings } });
  const webhookUrl = `${portal.url}${webhookPath}`;
  double.setWebhookUrl(webhookUrl);
  const gateway = options.gateway
    ? await startGatewayHarness(undefined, {
        database: portal.database,
        store: portal.store,
        ...options.gatewayOptions,
        settings: { SVC_KEY_PEPPER: harnessSecrets.SVC_KEY_PEPPER, ...options.gatewayOptions?.settings },
      })
    : undefined;
  return {
    double,
    portal,
    gateway,
    webhookUrl,
    close: async () => {
      await gateway?.close();
      await portal.close();
      await double.close();
    },
  };
}

/** A verified, signed-in user, optionally in an organisation with a role (test/support/portal-users.ts). */
export const signedInUser = (portal: PortalHarness, setup: { organisationId?: number; role?: string } = {}) => signUp(portal, setup);

/** The wallet's ledger balance in nano-USD. */
export async function ledgerNano(portal: PortalHarness, payerId: string): Promise<number> {
  const row = (await portal.database.knex('wallet_entries').where({ payer_id: payerId }).sum({ total: 'amount_nano' }).first()) as {
    total: string | null;
  };
  return Number(row.total ?? 0);
}

/** Starts a checkout through the API; its hosted URL and payment id. */
export async function startCheckout(
  client: PortalClient,
  amount: unknown,
): Promise<{ url: string; payment_id: number; total_usd: number }> {
  const res = await client.postJson('/api/billing/checkout', { amount });
  expect(res.status, await res.clone().text()).toBe(200);
  const body = (await res.json()) as { ok: boolean; url: string; payment_id: number; total_usd: number };
  expect(body.ok).toBe(true);
  return body;
}

/** A gateway key charged to `payerId` (created as the Management API would); its secret. */
export async function keyPayingFrom(portal: PortalHarness, payerId: string): Promise<string> {
  const keys = new KeyRepository(portal.database.knex, harnessSecrets.SVC_KEY_PEPPER);
  return (await keys.create({ kind: 'managed', name: `paid by ${payerId}`, source: 'api', payerId })).secret;
}

/** A dispute as the processor sends it: none of our metadata, only the payment intent it is about. */
export const disputeOf = (shown: { payment_intent?: unknown; amount_total?: unknown }, id: string, status = 'needs_response') => ({
  id,
  object: 'dispute',
  amount: shown.amount_total,
  charge: `ch_${id}`,
  payment_intent: shown.payment_intent,
  status,
  metadata: {},
});
