// Card top-ups end to end with the official `stripe` library against the processor double: the
// checkout's request shape, the hosted page, the signed webhook crediting exactly once (ten
// concurrent deliveries of one event and a late one), refunds reversing (partial too), a declined
// card recorded and emailed, forged signatures changing nothing, and a payer refused at the
// gateway with billing_limit_reached served again within a second of the credit.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { waitFor } from '../support/wait-for.js';
import { keyPayingFrom, ledgerNano, signedInUser, startBillingWorld, startCheckout, type BillingWorld } from './billing-helpers.js';

let world: BillingWorld;
beforeAll(async () => {
  world = await startBillingWorld({ gateway: true });
});
afterAll(async () => {
  await world?.close();
});

const nano = (usd: number) => Math.round(usd * 1e9);
const knex = () => world.portal.database.knex;

/** The session id in the portal's success URL. */
/** The checkout session id in a hosted page's URL. */
const hostedSessionId = (hostedUrl: string) => new URL(hostedUrl).pathname.split('/').pop()!;
const sessionOf = (redirect: string) => new URL(redirect).searchParams.get('session_id')!;
/** The portal path (with its query) of the cancel link the processor was given for a hosted page. */
const cancelLinkOf = (hostedUrl: string) => {
  const link = new URL(world.double.sessions.get(hostedSessionId(hostedUrl))!.cancel_url!);
  return `${link.pathname}${link.search}`;
};

/** Pays a fresh checkout of `amount` for `client`; the session object and the redirect. */
async function paidCheckout(client: Parameters<typeof startCheckout>[0], amount: number) {
  const { url, payment_id } = await startCheckout(client, amount);
  const outcome = await world.double.payOnHostedPage(url);
  if (!('redirect' in outcome)) throw new Error(`refused: ${outcome.refused}`);
  const sessionId = sessionOf(outcome.redirect);
  return { sessionId, paymentId: payment_id, redirect: outcome.redirect, session: world.double.sessions.get(sessionId)! };
}

describe('checkout', () => {
  it('sends the processor a payment-mode session in integer cents with the fee grossed up, and answers {ok, url}', async () => {
    const { client, id } = await signedInUser(world.portal);
    const config = await (await client.get('/api/billing/processor-config')).json();
    expect(config).toMatchObject({
      configured: true,
      currency: 'usd',
      min_topup_usd: 5,
      max_topup_usd: 10000,
      publishable_key: world.double.publishableKey,
      fee_policy: { kind: 'gross_up', percent: 2.9, fixed_usd: 0.3 },
    });
    expect(JSON.stringify(config)).not.toContain(world.double.secretKey);

    const res = await client.postJson('/api/billing/checkout', { amount: 10 });
    const body = (await res.json()) as Record<string, unknown>;
    expect(res.status).toBe(200);
    // (10.00 + 0.30) / (1 − 0.029) = 10.6076… → 10.61: the fee is 0.61.
    // Nothing has reached the wallet yet (wallet_usd, as in the payments list); credit_usd is what will once paid.
    expect(body).toMatchObject({
      ok: true,
      amount_usd: 10,
      wallet_usd: 0,
      credit_usd: 10,
      fee_usd: 0.61,
      total_usd: 10.61,
      payer: `user:${id}`,
    });
    // The payments list shows the same card charge; its wallet_usd is the wallet effect so far —
    // nothing while pending — and the credit the payment buys is total_usd − fee_usd.
    const listed = (await (await client.get('/api/billing/payments')).json()) as { data: Record<string, unknown>[] };
    expect(listed.data[0]).toMatchObject({
      status: 'pending',
      wallet_usd: 0,
      credit_usd: 10,
      total_usd: 10.61,
      amount_usd: 10.61,
      fee_usd: 0.61,
    });
    expect(String(body.url)).toMatch(new RegExp(`^${world.double.url}/pay/cs_test_`));

    const created = world.double.requestsTo('POST', '/v1/checkout/sessions').at(-1)!;
    // Unique to this deployment and row: the installation id, the payment id and its creation time.
    expect(created.idempotencyKey).toMatch(new RegExp(`^checkout:[A-Za-z0-9_-]+:payment:${body.payment_id}:[0-9]+$`));
    expect(created.params).toMatchObject({
      mode: 'payment',
      line_items: [
        { quantity: '1', price_data: { currency: 'usd', unit_amount: '1000' } },
        { quantity: '1', price_data: { currency: 'usd', unit_amount: '61' } },
      ],
      metadata: { payment_id: String(body.payment_id), payer_id: `user:${id}` },
      payment_intent_data: { metadata: { payment_id: String(body.payment_id), payer_id: `user:${id}` } },
    });
    // The installation id, on the session and its PaymentIntent: their events are told from another deployment's by it.
    const install = ((await world.portal.database.knex('billing_installation').first('install_id')) as { install_id: string }).install_id;
    expect(created.params).toMatchObject({ metadata: { install_id: install }, payment_intent_data: { metadata: { install_id: install } } });
    expect(world.double.violations).toEqual([]);
    // Nothing is credited by starting a checkout.
    expect(await ledgerNano(world.portal, `user:${id}`)).toBe(0);
  });

  it('the billing page pages its payments table: the newest ten, then older ones', async () => {
    const { client } = await signedInUser(world.portal);
    for (let i = 0; i < 12; i++) expect((await client.postJson('/api/billing/checkout', { amount: 5 + i })).status).toBe(200);
    const rows = (html: string) => (/data-testid="payments">([\s\S]*?)<\/table>/.exec(html)?.[1] ?? '').split('<tr>').length - 2;
    const first = await (await client.get('/dashboard/billing')).text();
    expect(rows(first)).toBe(10);
    const older = /href="([^"]+)" data-testid="older-payments"/.exec(first)?.[1];
    expect(older).toMatch(/^\/dashboard\/billing\?payments_before=\d+#payments$/);
    const second = await (await client.get(older!.replace('#payments', ''))).text();
    expect(rows(second)).toBe(2);
    expect(second).toContain('Newest payments');
    expect(second).not.toContain('data-testid="older-payments"');
    // A cursor that is not an id: the billing page itself, with the problem, not an error page.
    const refused = await client.get('/dashboard/billing?payments_before=abc');
    expect(refused.status).toBe(422);
    const refusedPage = await refused.text();
    expect(refusedPage).toContain('data-testid="payments"');
    expect(refusedPage).toMatch(/payments before: must be a whole number/);
    expect((await client.get('/dashboard/billing?payments_before=abc', { accept: 'application/json' })).status).toBe(422);
  });

  it('refuses amounts outside the documented limits or finer than a cent with 422, creating nothing', async () => {
    const { client } = await signedInUser(world.portal);
    const before = world.double.requestsTo('POST', '/v1/checkout/sessions').length;
    for (const amount of [4.99, 10000.01, 12.345, -5, 0, 'ten', '', null, { usd: 5 }, 1e21]) {
      const res = await client.postJson('/api/billing/checkout', { amount });
      expect(res.status, JSON.stringify(amount)).toBe(422);
      const error = (await res.json()) as { code: string; human_message: string };
      expect(error.code).toBe('validation_error');
    }
    expect((await client.postJson('/api/billing/checkout', {})).status).toBe(422);
    expect(world.double.requestsTo('POST', '/v1/checkout/sessions').length).toBe(before);
    // The limits themselves are accepted, and "25" as text too.
    for (const amount of [5, 10000, '25.5']) expect((await client.postJson('/api/billing/checkout', { amount })).status).toBe(200);
  });

  it('the fund form sent again goes to the checkout it opened, not a second one; once paid, to its confirmation', async () => {
    const { client, id } = await signedInUser(world.portal);
    const page = await (await client.get('/dashboard/billing/fund?amount=12')).text();
    const formToken = /name="form_token" value="([^"]+)"/.exec(page)?.[1];
    expect(formToken, 'the confirming form carries a one-use token').toBeDefined();
    const send = () => client.postForm('/dashboard/billing/fund', { amount: '12.00', form_token: formToken! });
    // A double click: both at once, one checkout, both sent to its hosted page.
    const [first, second] = await Promise.all([send(), send()]);
    expect([first.status, second.status]).toEqual([303, 303]);
    const hosted = first.headers.get('location')!;
    expect(second.headers.get('location')).toBe(hosted);
    const payments = () => knex()('billing_payments').where({ user_id: id, kind: 'checkout' }).select('id', 'status');
    const [payment] = await payments();
    expect(await payments()).toHaveLength(1);
    const opened = world.double
      .requestsTo('POST', '/v1/checkout/sessions')
      .filter((r) => r.params.client_reference_id === String(payment!.id));
    expect(opened).toHaveLength(1);
    // Paid, then the page that confirmed it is sent again (back and submit): its confirmation, no new checkout.
    const outcome = await world.double.payOnHostedPage(hosted);
    if (!('redirect' in outcome)) throw new Error(`refused: ${outcome.refused}`);
    const again = await send();
    expect(again.headers.get('location')).toBe(`/dashboard/billing/fund?session_id=${sessionOf(outcome.redirect)}`);
    expect(await payments()).toHaveLength(1);
    // A new form (a new token) opens a new checkout.
    const next = await (await client.get('/dashboard/billing/fund?amount=12')).text();
    const nextToken = /name="form_token" value="([^"]+)"/.exec(next)![1]!;
    expect(nextToken).not.toBe(formToken);
    const another = await client.postForm('/dashboard/billing/fund', { amount: '12.00', form_token: nextToken });
    expect(another.headers.get('location')).not.toBe(hosted);
    expect(await payments()).toHaveLength(2);
  });

  it('is offered on the public pricing page, which once said card top-ups were "coming"', async () => {
    const pricing = await (await fetch(`${world.portal.url}/pricing`)).text();
    expect(pricing).toContain('Top it up by card on the Billing page, once or automatically when its balance runs low.');
    expect(pricing).not.toContain('coming');
  });

  it('needs a signed-in user', async () => {
    const res = await fetch(`${world.portal.url}/api/billing/checkout`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ amount: 10 }),
    });
    expect(res.status).toBe(401);
  });
});

describe('the signed webhook', () => {
  it('credits a completed checkout once; checkout-status confirms it to the payer only', async () => {
    const { client, id } = await signedInUser(world.portal);
    const { sessionId, paymentId } = await paidCheckout(client, 20);
    expect(await ledgerNano(world.portal, `user:${id}`)).toBe(nano(20));
    const entry = await knex()('wallet_entries')
      .where({ reference: `checkout:${sessionId}` })
      .first();
    expect(entry).toMatchObject({ payer_id: `user:${id}`, kind: 'credit' });

    const status = (await (await client.get(`/api/billing/checkout-status?session_id=${sessionId}`)).json()) as Record<string, unknown>;
    expect(status).toMatchObject({
      status: 'credited',
      balance_usd: 20,
      entry: { amount_usd: 20 },
      payment: { payment_id: paymentId, status: 'succeeded' },
    });

    const other = await signedInUser(world.portal);
    expect((await other.client.get(`/api/billing/checkout-status?session_id=${sessionId}`)).status).toBe(404);
    for (const bad of ['', 'abc', `${sessionId}&session_id=${sessionId}`, 'cs_' + 'x'.repeat(300)])
      expect((await client.get(`/api/billing/checkout-status?session_id=${bad}`)).status, bad).toBe(422);
    expect((await client.get('/api/billing/checkout-status')).status).toBe(422);
  });

  it('applies one event delivered ten times at once, and once more later, exactly once', async () => {
    const { client, id, email } = await signedInUser(world.portal);
    const { url, payment_id } = await startCheckout(client, 15);
    const sessionId = new URL(url).pathname.split('/').pop()!;
    // The double completes the session without delivering, so the test controls every delivery.
    const session = world.double.sessions.get(sessionId)!;
    session.status = 'complete';
    session.payment_status = 'paid';
    session.payment_intent = 'pi_concurrent_test';
    const { line_items: _l, payment_intent_metadata: _m, ...shown } = session;
    const event = world.double.buildEvent('checkout.session.completed', shown);

    const answers = await Promise.all(Array.from({ length: 10 }, () => world.double.post(world.webhookUrl, event)));
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
    const outcomes = await Promise.all(answers.map(async (a) => ((await a.json()) as { outcome: string }).outcome));
    expect(outcomes.filter((o) => o === 'credited')).toHaveLength(1);
    expect(outcomes.filter((o) => o === 'duplicate')).toHaveLength(9);
    expect(await ledgerNano(world.portal, `user:${id}`)).toBe(nano(15));

    const later = await world.double.post(world.webhookUrl, event);
    expect(((await later.json()) as { outcome: string }).outcome).toBe('duplicate');
    // A different event id for the same session (the processor's own retry) cannot credit again either.
    const twin = await world.double.post(world.webhookUrl, world.double.buildEvent('checkout.session.completed', shown));
    expect(twin.status).toBe(200);
    expect(await ledgerNano(world.portal, `user:${id}`)).toBe(nano(15));
    expect(await knex()('billing_payments').where({ id: payment_id }).first('status')).toEqual({ status: 'succeeded' });
    expect(await knex()('billing_processor_events').where({ event_id: event.id }).count({ n: '*' })).toEqual([{ n: expect.anything() }]);
    // One receipt, as the billing page promises: the payment credited once is announced once.
    const receipt = `email to ${email} ("Receipt: $15.00 added to the wallet")`;
    await waitFor('the receipt', () => world.portal.mail.some((m) => m.includes(receipt)), 5_000);
    expect(world.portal.mail.filter((m) => m.includes(receipt))).toHaveLength(1);
    const file = /written to (\S+)/.exec(world.portal.mail.find((m) => m.includes(receipt))!)![1]!;
    const body = readFileSync(file, 'utf8');
    expect(body).toContain(`Payment:              ${payment_id}`);
    expect(body).toMatch(/Card charged: +\$15\.\d\d\n {2}card processing fee \$0\.\d\d\nAdded to the wallet: +\$15\.00/);
  });

  it('reverses refunds from the wallet, partial ones included, and never more than was credited', async () => {
    const { client, id } = await signedInUser(world.portal);
    const { paymentId, session } = await paidCheckout(client, 10);
    const charge = world.double.paymentIntents.get(session.payment_intent!)!.latest_charge!;
    expect(await ledgerNano(world.portal, `user:${id}`)).toBe(nano(10));

    world.double.refund(charge, 300);
    await world.double.settled();
    expect(await ledgerNano(world.portal, `user:${id}`)).toBe(nano(7));
    expect(await knex()('billing_payments').where({ id: paymentId }).first('status', 'refunded_cents')).toEqual({
      status: 'partially_refunded',
      refunded_cents: 300,
    });

    // The rest of the charge (fee included, 761 cents): whatever is left of the $10 credit goes.
    world.double.refund(charge);
    await world.double.settled();
    expect(await ledgerNano(world.portal, `user:${id}`)).toBe(0);
    expect(await knex()('billing_payments').where({ id: paymentId }).first('status')).toEqual({ status: 'refunded' });

    // A stale delivery with a smaller cumulative refund changes nothing.
    const stale = { ...world.double.charges.get(charge)!, amount_refunded: 300 };
    const res = await world.double.post(world.webhookUrl, world.double.buildEvent('charge.refunded', stale));
    expect(((await res.json()) as { outcome: string }).outcome).toBe('ignored');
    expect(await ledgerNano(world.portal, `user:${id}`)).toBe(0);

    const history = (await (await client.get('/api/billing/payments')).json()) as {
      data: { kind: string; wallet_usd: number; credit_usd: number | null }[];
    };
    expect(history.data.filter((p) => p.kind === 'refund').map((p) => p.wallet_usd)).toEqual([-7, -3]);
    // A refund credits nothing: credit_usd is a top-up's.
    expect(history.data.filter((p) => p.kind === 'refund').map((p) => p.credit_usd)).toEqual([null, null]);
  });

  it('a refund the bank could not pay gives back what it took, once; a later refund of the same amount is taken again', async () => {
    const { client, id } = await signedInUser(world.portal);
    const { paymentId, session } = await paidCheckout(client, 10);
    const charge = world.double.paymentIntents.get(session.payment_intent!)!.latest_charge!;
    world.double.refund(charge, 300);
    // Delivered one after the other (two deliveries at once may apply in either order).
    await world.double.settled();
    const rest = world.double.refund(charge);
    await world.double.settled();
    expect(await ledgerNano(world.portal, `user:${id}`)).toBe(0);

    // The second refund fails at the bank: the $7 it took comes back, the first one's $3 stays taken.
    world.double.failRefund(rest.id);
    await world.double.settled();
    expect(await ledgerNano(world.portal, `user:${id}`)).toBe(nano(7));
    expect(await knex()('billing_payments').where({ id: paymentId }).first('status', 'refunded_cents')).toEqual({
      status: 'partially_refunded',
      refunded_cents: 300,
    });
    // Both events reporting the failure arrived; the refund's id made it once.
    const reports = world.double.events.filter((e) => (e.data.object as { id?: string }).id === rest.id).map((e) => e.id);
    const outcomes = (await knex()('billing_processor_events').whereIn('event_id', reports).pluck('outcome')) as string[];
    expect(outcomes.sort()).toEqual(['ignored', 'refund_returned']);
    const again = await world.double.post(world.webhookUrl, world.double.buildEvent('refund.updated', world.double.refunds.get(rest.id)));
    expect(((await again.json()) as { outcome: string }).outcome).toBe('ignored');
    expect(await ledgerNano(world.portal, `user:${id}`)).toBe(nano(7));

    // Refunded again, to the same cumulative amount as before the failure: taken again, not read as done.
    world.double.refund(charge);
    await world.double.settled();
    expect(await ledgerNano(world.portal, `user:${id}`)).toBe(0);
    expect(await knex()('billing_payments').where({ id: paymentId }).first('status')).toEqual({ status: 'refunded' });

    const history = (await (await client.get('/api/billing/payments')).json()) as {
      data: { kind: string; status: string; wallet_usd: number; failure_code: string | null }[];
    };
    expect(history.data.filter((p) => p.kind === 'refund').map((p) => [p.status, p.wallet_usd])).toEqual([
      ['succeeded', -7],
      ['returned', 7],
      ['succeeded', -7],
      ['succeeded', -3],
    ]);
    expect(history.data.find((p) => p.status === 'returned')?.failure_code).toBe('expired_or_canceled_card');
    const page = await (await client.get('/dashboard/billing')).text();
    expect(page).toContain('status-returned');
    expect(page).toContain('The bank could not pay this refund');
  });

  it('records a declined card as a failed payment, tells the user by email, and credits nothing', async () => {
    const { client, id, email } = await signedInUser(world.portal);
    const { url, payment_id } = await startCheckout(client, 12);
    const outcome = await world.double.payOnHostedPage(url, '4000 0000 0000 0002');
    expect(outcome).toEqual({ refused: 'Your card was declined.' });
    await world.double.settled();
    expect(await knex()('billing_payments').where({ id: payment_id }).first('status', 'failure_code')).toEqual({
      status: 'failed',
      failure_code: 'generic_decline',
    });
    expect(await ledgerNano(world.portal, `user:${id}`)).toBe(0);
    await waitFor('the failure email', () => world.portal.mail.some((m) => m.includes(`email to ${email} ("Your payment failed")`)), 5_000);

    // The session stays open: paying it with a good card afterwards still credits.
    const retried = await world.double.payOnHostedPage(url);
    expect('redirect' in retried).toBe(true);
    expect(await ledgerNano(world.portal, `user:${id}`)).toBe(nano(12));
    expect(await knex()('billing_payments').where({ id: payment_id }).first('status')).toEqual({ status: 'succeeded' });
  });

  it('an abandoned checkout does not stay pending: the cancel link expires it at once, a timed-out one by its event', async () => {
    const { client, id } = await signedInUser(world.portal);
    // Cancelled: the user follows the hosted page's cancel link back to the portal.
    const cancelled = await startCheckout(client, 8);
    const back = await client.get(cancelLinkOf(cancelled.url));
    expect(back.status).toBe(200);
    expect(await back.text()).toContain('Checkout cancelled');
    expect(world.double.requestsTo('POST', `/v1/checkout/sessions/${hostedSessionId(cancelled.url)}/expire`)).toHaveLength(1);
    expect(await knex()('billing_payments').where({ id: cancelled.payment_id }).first('status')).toEqual({ status: 'expired' });
    // The processor no longer takes the payment, and its expiry event changes nothing more.
    await expect(world.double.payOnHostedPage(cancelled.url)).rejects.toThrow(/hosted page answered 410/);
    await world.double.settled();
    expect(await knex()('billing_payments').where({ id: cancelled.payment_id }).first('status')).toEqual({ status: 'expired' });

    // Timed out unpaid: the processor expires the hosted page when it comes due, and its event expires the payment.
    const abandoned = await startCheckout(client, 9);
    const session = world.double.sessions.get(hostedSessionId(abandoned.url))!;
    expect(world.double.expireDueSessions(session.expires_at).map((s) => s.id)).toContain(session.id);
    await world.double.settled();
    const { line_items: _l, payment_intent_metadata: _m, ...shown } = { ...session, status: 'expired' as const, url: null };
    expect(await knex()('billing_payments').where({ id: abandoned.payment_id }).first('status')).toEqual({ status: 'expired' });
    const history = (await (await client.get('/api/billing/payments')).json()) as { data: { id: string; status: string }[] };
    expect(history.data.map((p) => p.status)).toEqual(['expired', 'expired']);

    // A paid checkout is never expired, by the link or by a late event.
    const paid = await startCheckout(client, 10);
    const outcome = await world.double.payOnHostedPage(paid.url);
    expect('redirect' in outcome).toBe(true);
    await world.double.settled();
    await client.get(cancelLinkOf(paid.url));
    const late = world.double.buildEvent('checkout.session.expired', { ...shown, id: hostedSessionId(paid.url) });
    expect((await world.double.post(world.webhookUrl, late)).status).toBe(200);
    expect(await knex()('billing_payments').where({ id: paid.payment_id }).first('status')).toEqual({ status: 'succeeded' });
    expect(await ledgerNano(world.portal, `user:${id}`)).toBe(nano(10));
  });

  it('wallet_usd and the Wallet column are the wallet effect: nothing for a pending, failed or expired top-up (outside probe: expired showed $8.00)', async () => {
    const { client, id } = await signedInUser(world.portal);
    const declined = await startCheckout(client, 9);
    expect(await world.double.payOnHostedPage(declined.url, '4000 0000 0000 0002')).toHaveProperty('refused');
    const expired = await startCheckout(client, 8);
    expect((await client.get(cancelLinkOf(expired.url))).status).toBe(200);
    const paid = await paidCheckout(client, 6);
    await world.double.settled();
    const pending = await startCheckout(client, 7);
    expect(await ledgerNano(world.portal, `user:${id}`)).toBe(nano(6));

    const listed = (await (await client.get('/api/billing/payments')).json()) as {
      data: { payment_id: number; status: string; wallet_usd: number; total_usd: number; fee_usd: number }[];
    };
    const byId = new Map(listed.data.map((p) => [p.payment_id, p]));
    expect(byId.get(pending.payment_id)).toMatchObject({ status: 'pending', wallet_usd: 0 });
    expect(byId.get(declined.payment_id)).toMatchObject({ status: 'failed', wallet_usd: 0 });
    expect(byId.get(expired.payment_id)).toMatchObject({ status: 'expired', wallet_usd: 0, credit_usd: 8, total_usd: 8.55, fee_usd: 0.55 });
    expect(byId.get(paid.paymentId)).toMatchObject({ status: 'succeeded', wallet_usd: 6 });
    // The wallet effects add up to the balance.
    expect(listed.data.reduce((sum, p) => sum + p.wallet_usd, 0)).toBe(6);

    const status = async (sessionId: string) =>
      (await (await client.get(`/api/billing/checkout-status?session_id=${sessionId}`)).json()) as {
        status: string;
        payment: { wallet_usd: number; total_usd: number };
      };
    expect(await status(hostedSessionId(expired.url))).toMatchObject({ status: 'expired', payment: { wallet_usd: 0, total_usd: 8.55 } });
    expect(await status(hostedSessionId(pending.url))).toMatchObject({ status: 'pending', payment: { wallet_usd: 0 } });
    expect(await status(paid.sessionId)).toMatchObject({ status: 'credited', payment: { wallet_usd: 6 } });

    // The billing page's Wallet column: a dash where nothing reached the wallet.
    const html = await (await client.get('/dashboard/billing')).text();
    const walletCell = (paymentId: number) => {
      const row = new RegExp(`top-up #${paymentId}(?![0-9])[\\s\\S]*?</tr>`).exec(html)?.[0] ?? '';
      return [...row.matchAll(/<td>([\s\S]*?)<\/td>/g)][1]?.[1]?.trim();
    };
    expect(walletCell(expired.payment_id)).toBe('—');
    expect(walletCell(declined.payment_id)).toBe('—');
    expect(walletCell(pending.payment_id)).toBe('—');
    expect(walletCell(paid.paymentId)).toBe('$6.00');
  });

  it('the confirmation page of an expired checkout says nothing was charged and offers a new top-up (outside probe: it said only "expired")', async () => {
    const { client } = await signedInUser(world.portal);
    const expired = await startCheckout(client, 8);
    expect((await client.get(cancelLinkOf(expired.url))).status).toBe(200);
    const confirmation = await (await client.get(`/dashboard/billing/fund?session_id=${hostedSessionId(expired.url)}`)).text();
    expect(confirmation).toContain('data-status="expired"');
    expect(confirmation).toMatch(/This checkout expired before it was paid: nothing was charged and nothing was added to your wallet\./);
    expect(confirmation).toContain('href="/dashboard/billing/fund">Start a new top-up</a>');
  });

  it('another site sending the browser to the cancel address with a guessed payment id expires nothing: only the processor’s link carries the proof', async () => {
    const { client } = await signedInUser(world.portal);
    const victim = await startCheckout(client, 6);
    const link = new URL(world.double.sessions.get(hostedSessionId(victim.url))!.cancel_url!);
    expect(link.searchParams.get('cancelled')).toBe(String(victim.payment_id));
    const proof = link.searchParams.get('proof')!;
    expect(proof).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    // The proof of one payment is not the proof of the next one.
    const other = await startCheckout(client, 7);
    expect(new URL(world.double.sessions.get(hostedSessionId(other.url))!.cancel_url!).searchParams.get('proof')).not.toBe(proof);
    const crossSite = { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate', referer: 'https://elsewhere.example/' };
    for (const path of [
      `/dashboard/billing/fund?cancelled=${victim.payment_id}`,
      `/dashboard/billing/fund?cancelled=${victim.payment_id}&proof=${'A'.repeat(proof.length)}`,
      `/dashboard/billing/fund?cancelled=${victim.payment_id}&proof=${new URL(world.double.sessions.get(hostedSessionId(other.url))!.cancel_url!).searchParams.get('proof')}`,
      `/dashboard/billing/fund?cancelled=${victim.payment_id}&proof=short`,
    ]) {
      const page = await client.get(path, crossSite);
      expect(page.status).toBe(200);
      expect(await page.text()).not.toContain('Checkout cancelled');
    }
    expect(world.double.requestsTo('POST', `/v1/checkout/sessions/${hostedSessionId(victim.url)}/expire`)).toHaveLength(0);
    expect(await knex()('billing_payments').where({ id: victim.payment_id }).first('status')).toEqual({ status: 'pending' });
    // The checkout stays payable, and is credited.
    const outcome = await world.double.payOnHostedPage(victim.url);
    expect('redirect' in outcome).toBe(true);
    await waitFor('the victim’s payment to be credited', async () => {
      const row = (await knex()('billing_payments').where({ id: victim.payment_id }).first('status')) as { status: string } | undefined;
      return row?.status === 'succeeded';
    });
  });

  it('refuses a forged, missing or stale signature with 400 and changes nothing', async () => {
    const { client, id } = await signedInUser(world.portal);
    const { url } = await startCheckout(client, 30);
    const sessionId = new URL(url).pathname.split('/').pop()!;
    const session = world.double.sessions.get(sessionId)!;
    const {
      line_items: _l,
      payment_intent_metadata: _m,
      ...shown
    } = { ...session, status: 'complete' as const, payment_status: 'paid' as const };
    const event = world.double.buildEvent('checkout.session.completed', shown);
    const count = async () => Number(((await knex()('billing_processor_events').count({ n: '*' })) as { n: string }[])[0]!.n);
    const before = await count();
    const payload = JSON.stringify(event);
    const attempts = [
      world.double.post(world.webhookUrl, event, { secret: 'whsec_forged' }),
      world.double.post(world.webhookUrl, event, { signature: null }),
      world.double.post(world.webhookUrl, event, { signature: 'garbage' }),
      // Signed correctly, then the amount changed in transit.
      world.double.post(world.webhookUrl, payload.replace('"amount_total":', '"amount_total":1'), {
        signature: (await import('stripe')).default.webhooks.generateTestHeaderString({ payload, secret: world.double.webhookSecret }),
      }),
      // A correct signature made an hour ago (replayed).
      world.double.post(world.webhookUrl, event, {
        signature: (await import('stripe')).default.webhooks.generateTestHeaderString({
          payload,
          secret: world.double.webhookSecret,
          timestamp: Math.floor(Date.now() / 1000) - 3600,
        }),
      }),
    ];
    for (const res of await Promise.all(attempts)) {
      expect(res.status).toBe(400);
      expect(((await res.json()) as { code: string }).code).toBe('invalid_request');
    }
    expect(await count()).toBe(before);
    expect(await ledgerNano(world.portal, `user:${id}`)).toBe(0);
    // The genuine event still works afterwards.
    expect((await world.double.post(world.webhookUrl, event)).status).toBe(200);
    expect(await ledgerNano(world.portal, `user:${id}`)).toBe(nano(30));
  });

  it('acknowledges event types it does not use, and events about payments it never made', async () => {
    for (const event of [
      world.double.buildEvent('customer.created', { id: 'cus_x', object: 'customer' }),
      world.double.buildEvent('charge.dispute.created', { id: 'dp_x', object: 'dispute' }),
      world.double.buildEvent('checkout.session.completed', {
        id: 'cs_test_foreign',
        object: 'checkout.session',
        mode: 'payment',
        payment_status: 'paid',
        amount_total: 500,
        currency: 'usd',
        metadata: {},
      }),
      world.double.buildEvent('payment_intent.payment_failed', { id: 'pi_foreign', object: 'payment_intent', metadata: {} }),
    ]) {
      const res = await world.double.post(world.webhookUrl, event);
      expect(res.status).toBe(200);
      expect(((await res.json()) as { received: boolean }).received).toBe(true);
    }
  });
});

describe('a payer refused at the gateway', () => {
  it('is served again within a second of the webhook credit', async () => {
    const gateway = world.gateway!;
    const { client, id } = await signedInUser(world.portal);
    const secret = await keyPayingFrom(world.portal, `user:${id}`);
    const openai = new OpenAI({ baseURL: `${gateway.gateway.url}/v1`, apiKey: secret, maxRetries: 0 });
    const call = () => openai.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 });
    const refusal = await call().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(refusal).toBeInstanceOf(OpenAI.APIError);
    expect((refusal as InstanceType<typeof OpenAI.APIError>).status).toBe(403);
    expect((refusal as InstanceType<typeof OpenAI.APIError>).code).toBe('billing_limit_reached');

    await paidCheckout(client, 5);
    const credited = Date.now();
    await waitFor(
      'the gateway to serve the funded payer',
      () =>
        call().then(
          () => true,
          () => false,
        ),
      1_000,
    );
    expect(Date.now() - credited).toBeLessThan(1_000);
  });
});

describe('removed and retired endpoints', () => {
  it('answer with catalogue codes and change nothing', async () => {
    const { client, id } = await signedInUser(world.portal);
    const tables = ['wallet_entries', 'billing_payments', 'billing_customers', 'billing_checkout_sessions'];
    // This user's rows only: a wallet debit of an earlier test's gateway call is written by the
    // audit writer whenever its batch commits, which was once in the middle of this test.
    const counts = async () =>
      Promise.all(
        tables.map(
          async (t) =>
            (
              (await knex()(t)
                .where({ payer_id: `user:${id}` })
                .count({ n: '*' })) as { n: string }[]
            )[0]!.n,
        ),
      );
    const before = await counts();
    const cases: [string, string, number, string][] = [
      ['POST', '/api/billing/add-funds', 403, 'replacement_required'],
      ['POST', '/api/billing/payment-method', 403, 'replacement_required'],
      ['DELETE', '/api/billing/payment-method/12', 403, 'replacement_required'],
      ['POST', '/api/billing/payment-method/12/default', 403, 'replacement_required'],
      ['POST', '/api/billing/link-partner', 501, 'not_implemented'],
      ['POST', '/api/billing/unlink-partner', 501, 'not_implemented'],
      ['DELETE', '/api/billing/payment-method/pm_abc', 422, 'validation_error'],
      ['POST', '/api/billing/payment-method/0/default', 422, 'validation_error'],
    ];
    for (const [method, path, status, code] of cases) {
      const res = await client.request(method, path, { json: { amount: 100, payer: `user:${id}` } });
      expect(res.status, `${method} ${path}`).toBe(status);
      const body = (await res.json()) as { code: string; human_message: string };
      expect(body.code).toBe(code);
      expect(body.human_message).toBeTruthy();
    }
    expect(await counts()).toEqual(before);
    expect(await ledgerNano(world.portal, `user:${id}`)).toBe(0);
  });
});
