// A hosted checkout page times out unpaid at the processor: the local test processor expires its
// open sessions when they come due, with the event the portal marks the payment expired by, so an
// abandoned top-up does not stay pending (nor across a restart of `npm start`).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, test } from 'vitest';
import type Stripe from 'stripe';
import { waitFor } from '../../../test/support/wait-for.js';
import { stripeClientOf } from './testing.js';
import { startLocalTestProcessor, type LocalTestProcessor, type LocalTestProcessorOptions } from './index.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** A webhook endpoint that keeps the types of the events it was sent. */
async function receiver(): Promise<{ url: string; types: string[] }> {
  const types: string[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      types.push((JSON.parse(body) as { type: string }).type);
      res.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhook`, types };
}

async function processor(options: LocalTestProcessorOptions): Promise<LocalTestProcessor> {
  const started = await startLocalTestProcessor(options);
  cleanups.push(() => started.close());
  return started;
}

const clientOf = stripeClientOf;

async function openCheckout(stripe: Stripe, extra: Partial<Stripe.Checkout.SessionCreateParams> = {}): Promise<Stripe.Checkout.Session> {
  const customer = await stripe.customers.create(
    { email: 'payer@example.com', metadata: { payer_id: 'user:1' } },
    { idempotencyKey: 'c-1' },
  );
  return stripe.checkout.sessions.create(
    {
      mode: 'payment',
      customer: customer.id,
      success_url: 'http://127.0.0.1/back?session_id={CHECKOUT_SESSION_ID}',
      cancel_url: 'http://127.0.0.1/cancelled',
      metadata: { payer_id: 'user:1', payment_id: '7' },
      payment_intent_data: { metadata: { payment_id: '7' } },
      line_items: [{ quantity: 1, price_data: { currency: 'usd', unit_amount: 1000, product_data: { name: 'Top-up' } } }],
      ...extra,
    },
    { idempotencyKey: `s-${Math.random()}` },
  );
}

test('an open session past its expires_at is expired with its event; one not yet due stays open', async () => {
  const webhook = await receiver();
  const p = await processor({ webhookUrl: webhook.url, expirySweepMs: 0 });
  const stripe = clientOf(p);
  const session = await openCheckout(stripe);
  expect(session.expires_at - session.created).toBe(24 * 3600);

  expect(p.expireDueSessions(session.expires_at - 1)).toEqual([]);
  expect(p.expireDueSessions(session.expires_at).map((s) => s.id)).toEqual([session.id]);
  await p.settled();
  expect(webhook.types).toEqual(['checkout.session.expired']);
  expect(await stripe.checkout.sessions.retrieve(session.id)).toMatchObject({ status: 'expired', url: null });
  // Expired once: a later sweep sends nothing more.
  expect(p.expireDueSessions(session.expires_at + 3600)).toEqual([]);
});

test('expires_at is taken as asked within the processor bounds, and refused outside them', async () => {
  const p = await processor({ expirySweepMs: 0 });
  const stripe = clientOf(p);
  const inAnHour = Math.floor(Date.now() / 1000) + 3600;
  expect((await openCheckout(stripe, { expires_at: inAnHour })).expires_at).toBe(inAnHour);
  await expect(openCheckout(stripe, { expires_at: inAnHour - 3000 })).rejects.toThrow(/expires_at must be 30 minutes to 24 hours from now/);
});

test('a session that timed out while the processor was stopped expires at its next start', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'processor-expiry-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const stateFile = join(dir, 'payment-processor.json');
  const first = await processor({ stateFile, expirySweepMs: 0 });
  const session = await openCheckout(clientOf(first), { expires_at: Math.floor(Date.now() / 1000) + 1800 });
  await first.close();
  // Stopped past the session's deadline: the deadline moved into the past in the file it kept.
  const state = JSON.parse(readFileSync(stateFile, 'utf8')) as { sessions: [string, { expires_at: number }][] };
  state.sessions.find(([id]) => id === session.id)![1].expires_at = Math.floor(Date.now() / 1000) - 1;
  writeFileSync(stateFile, JSON.stringify(state));
  const webhook = await receiver();
  // As `npm start` does: the processor starts before the portal, whose webhook address is given
  // once it listens. Nothing expires while its event would go nowhere; then the session does.
  const second = await processor({ stateFile });
  expect(second.sessions.get(session.id)).toMatchObject({ status: 'open' });
  second.setWebhookUrl(webhook.url);
  await waitFor('the expiry event', () => webhook.types.includes('checkout.session.expired'));
  expect(second.sessions.get(session.id)).toMatchObject({ status: 'expired' });
});
