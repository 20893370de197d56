// Two deployments sharing one processor account (or one whose database was reset): their row ids
// repeat, so idempotency keys built from them alone made the second deployment replay the first
// one's customer and get idempotency errors for its checkouts (outside probe). The keys carry a
// per-database installation id (and a checkout its row's creation time).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookPath } from '../../core/billing/index.js';
import { startPortalHarness, type PortalHarness } from '../support/portal-harness.js';
import { startStripeDouble, type StripeDouble } from '../support/stripe-double.js';
import { signedInUser, startCheckout } from './billing-helpers.js';

let double: StripeDouble;
const portals: PortalHarness[] = [];
beforeAll(async () => {
  double = await startStripeDouble();
  for (let i = 0; i < 2; i++) portals.push(await startPortalHarness({ settings: double.portalSettings() }));
  double.setWebhookUrl(`${portals[0]!.url}${webhookPath}`);
});
afterAll(async () => {
  for (const p of portals) await p.close();
  await double?.close();
});

describe('deployments sharing a processor account', () => {
  it('each get their own customer and checkout for the same payer and payment ids', async () => {
    const a = await signedInUser(portals[0]!);
    const b = await signedInUser(portals[1]!);
    const first = await startCheckout(a.client, 10);
    const second = await startCheckout(b.client, 12);
    // The collision the probe found needs the same ids in both databases.
    expect([b.id, second.payment_id]).toEqual([a.id, first.payment_id]);
    const customers = await Promise.all(
      portals.map(
        async (p) =>
          ((await p.database.knex('billing_customers').first('processor_customer_id')) as { processor_customer_id: string })
            .processor_customer_id,
      ),
    );
    expect(customers[0]).not.toBe(customers[1]);
    expect(new URL(first.url).pathname).not.toBe(new URL(second.url).pathname);
    expect(double.requestsTo('POST', '/v1/checkout/sessions').map((r) => r.status)).toEqual([200, 200]);
  });
});
