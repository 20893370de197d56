// An organisation's billing user: nominated by an organisation administrator, paying for every
// member's portal keys at the gateway from the next request (the keys are re-pointed and
// announced in one step), cleared again, and refused to anyone outside the organisation or below
// org_admin; the organisation's billing email receives the payer's billing mail too; and the
// organisation's monthly budget, enforced at the gateway atomically across its members' keys.
import { fundWallet, signUp } from '../support/portal-users.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { waitFor } from '../support/wait-for.js';
import { ledgerNano, signedInUser, startBillingWorld, startCheckout, type BillingWorld } from './billing-helpers.js';

let world: BillingWorld;
beforeAll(async () => {
  world = await startBillingWorld({ gateway: true });
});
afterAll(async () => {
  await world?.close();
});

const knex = () => world.portal.database.knex;
const served = (secret: string) =>
  new OpenAI({ baseURL: `${world.gateway!.gateway.url}/v1`, apiKey: secret, maxRetries: 0 }).chat.completions
    .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'who pays?' }], max_tokens: 5 })
    .then(
      () => 'served',
      (e: unknown) => (e instanceof OpenAI.APIError ? String(e.code) : String(e)),
    );

async function organisation(name: string): Promise<number> {
  const [row] = (await knex()('organisations')
    .insert({ name, slug: `${name.toLowerCase().replace(/\W+/g, '-')}-${Date.now()}` })
    .returning('id')) as { id: number }[];
  return row!.id;
}

const fund = (payer: string, usd: number) => fundWallet(world.gateway!, payer, usd);

describe('the organisation billing user', () => {
  it("pays for members' keys from the next request once nominated, and no longer once cleared", async () => {
    const orgId = await organisation('Acme Payments');
    const admin = await signedInUser(world.portal, { organisationId: orgId, role: 'org_admin' });
    const member = await signedInUser(world.portal, { organisationId: orgId });
    await fund(`user:${admin.id}`, 10);
    const created = (await (await member.client.postJson('/dashboard/keys/new', { name: 'member service' })).json()) as {
      key: { gateway_key_id: string };
      secret: string;
    };
    expect(await served(created.secret)).toBe('billing_limit_reached');

    const nominated = await admin.client.postJson('/dashboard/admin/organisation/billing-user', { user_id: admin.id });
    expect(nominated.status).toBe(200);
    expect(await nominated.json()).toMatchObject({
      ok: true,
      organisation: { organisation_id: orgId, billing_user_id: admin.id, billing_user_email: admin.email },
    });
    expect((await knex()('api_keys').where({ id: created.key.gateway_key_id }).first('payer_id')).payer_id).toBe(`user:${admin.id}`);
    await waitFor('the gateway to charge the billing user', async () => (await served(created.secret)) === 'served', 2_000);
    // The member's billing page says who pays.
    const page = (await (await member.client.get('/dashboard/billing', { accept: 'application/json' })).json()) as Record<string, unknown>;
    expect(page).toMatchObject({ payer: `user:${admin.id}`, payer_source: 'organisation_billing_user', manages: false });
    // …and in words on the page, not as the wallet's id.
    const html = await (await member.client.get('/dashboard/billing')).text();
    expect(html).toContain('your organisation&#39;s billing user&#39;s wallet');
    expect(html).not.toContain(`user:${admin.id}`);

    const cleared = await admin.client.postJson('/dashboard/admin/organisation/billing-user', { user_id: '' });
    expect(await cleared.json()).toMatchObject({ organisation: { billing_user_id: null } });
    await waitFor('the gateway to charge the member again', async () => (await served(created.secret)) === 'billing_limit_reached', 2_000);
    const activity = await knex()('portal_activity').where({ user_id: admin.id, kind: 'organisation_billing_changed' }).count({ n: '*' });
    expect(Number(activity[0]!.n)).toBe(2);
  });

  it("moves members' keys off a billing user who is suspended, back on reactivation, and off for good once they leave or are deleted", async () => {
    const orgId = await organisation('Acme Standing');
    const owner = await signedInUser(world.portal, { role: 'owner' });
    const bob = await signedInUser(world.portal, { organisationId: orgId, role: 'org_admin' });
    const alice = await signedInUser(world.portal, { organisationId: orgId });
    await fund(`user:${alice.id}`, 12.34);
    await bob.client.postJson('/dashboard/admin/organisation/billing-user', { user_id: alice.id });
    const newKey = async (name: string) =>
      (await (await bob.client.postJson('/dashboard/keys/new', { name })).json()) as { key: { gateway_key_id: string }; secret: string };
    const payerOf = async (key: { key: { gateway_key_id: string } }) =>
      ((await knex()('api_keys').where({ id: key.key.gateway_key_id }).first('payer_id')) as { payer_id: string | null }).payer_id;
    const standing = async (status: string) =>
      expect((await owner.client.postJson(`/dashboard/admin/users/${alice.id}/status`, { status })).status).toBe(200);
    const bobsPayer = async () =>
      ((await (await bob.client.get('/dashboard/billing', { accept: 'application/json' })).json()) as { payer: string }).payer;
    const nominated = async () =>
      ((await knex()('organisations').where({ id: orgId }).first('billing_user_id')) as { billing_user_id: number | null }).billing_user_id;
    const saysInactive = async () =>
      (await (await bob.client.get('/dashboard/billing')).text()).includes('data-testid="billing-user-inactive"');
    const before = await newKey('before');
    expect(await payerOf(before)).toBe(`user:${alice.id}`);
    expect(await served(before.secret)).toBe('served');

    // Suspended: the page, the key record and the gateway all say Bob pays (and he has nothing).
    await standing('suspended');
    expect(await payerOf(before)).toBe(`user:${bob.id}`);
    expect([await bobsPayer(), await nominated(), await saysInactive()]).toEqual([`user:${bob.id}`, alice.id, true]);
    await waitFor(
      'the gateway to stop charging the suspended user',
      async () => (await served(before.secret)) === 'billing_limit_reached',
      2_000,
    );
    const during = await newKey('during');
    expect(await payerOf(during)).toBe(`user:${bob.id}`);

    // Reactivated: Alice pays again for both, including the key made while she was suspended.
    await standing('active');
    expect([await payerOf(before), await payerOf(during)]).toEqual([`user:${alice.id}`, `user:${alice.id}`]);
    expect([await bobsPayer(), await saysInactive()]).toEqual([`user:${alice.id}`, false]);
    await waitFor('the gateway to charge the reactivated user', async () => (await served(during.secret)) === 'served', 2_000);

    // Archived: as suspended.
    await standing('archived');
    expect(await payerOf(during)).toBe(`user:${bob.id}`);
    await standing('active');
    expect(await payerOf(during)).toBe(`user:${alice.id}`);

    // Moved out of the organisation: the nomination ends, and coming back does not revive it.
    const elsewhere = await organisation('Elsewhere Ltd');
    expect((await owner.client.postJson(`/dashboard/admin/users/${alice.id}/org`, { org_id: elsewhere })).status).toBe(200);
    expect(await payerOf(before)).toBe(`user:${bob.id}`);
    expect(await nominated()).toBeNull();
    await waitFor(
      'the gateway to stop charging the departed user',
      async () => (await served(before.secret)) === 'billing_limit_reached',
      2_000,
    );
    await owner.client.postJson(`/dashboard/admin/users/${alice.id}/org`, { org_id: orgId });
    expect(await payerOf(before)).toBe(`user:${bob.id}`);

    // Nominated again, then deleted: the keys leave her wallet and the nomination ends.
    await bob.client.postJson('/dashboard/admin/organisation/billing-user', { user_id: alice.id });
    expect(await payerOf(before)).toBe(`user:${alice.id}`);
    const deleted = await owner.client.postJson(`/dashboard/admin/users/${alice.id}/hard-delete`, { confirm: 'delete' });
    expect(deleted.status).toBe(200);
    expect([await payerOf(before), await payerOf(during)]).toEqual([`user:${bob.id}`, `user:${bob.id}`]);
    expect(await nominated()).toBeNull();
    await waitFor(
      'the gateway to stop charging the deleted user',
      async () => (await served(during.secret)) === 'billing_limit_reached',
      2_000,
    );
  });

  it('is changed only by administrators of the organisation, and only to one of its active members', async () => {
    const orgId = await organisation('Guarded Org');
    const otherOrg = await organisation('Other Org');
    const admin = await signedInUser(world.portal, { organisationId: orgId, role: 'org_admin' });
    const member = await signedInUser(world.portal, { organisationId: orgId });
    const outsider = await signedInUser(world.portal, { organisationId: otherOrg, role: 'org_admin' });

    const byMember = await member.client.postJson('/dashboard/admin/organisation/billing-user', { user_id: member.id });
    expect(byMember.status).toBe(403);
    expect(((await byMember.json()) as { code: string }).code).toBe('forbidden');
    expect(
      (await outsider.client.postJson('/dashboard/admin/organisation/billing-user', { user_id: outsider.id, org_id: orgId })).status,
    ).toBe(403);
    // Outside the org admin's reach: 404, as a user that does not exist (docs/administration.md "Reach").
    const foreign = await admin.client.postJson('/dashboard/admin/organisation/billing-user', { user_id: outsider.id });
    expect(foreign.status).toBe(404);
    expect(await foreign.json()).toMatchObject({ code: 'not_found' });
    for (const bad of [{}, { user_id: 'me' }, { user_id: -1 }, { user_id: 1.5 }])
      expect((await admin.client.postJson('/dashboard/admin/organisation/billing-user', bad)).status, JSON.stringify(bad)).toBe(422);
    await knex()('users').where({ id: member.id }).update({ status: 'suspended' });
    expect((await admin.client.postJson('/dashboard/admin/organisation/billing-user', { user_id: member.id })).status).toBe(409);
    expect((await knex()('organisations').where({ id: orgId }).first('billing_user_id')).billing_user_id).toBeNull();
  });

  it('refuses an org admin a nominee of a higher role: 404, as one that does not exist', async () => {
    const orgId = await organisation('Ranked Org');
    const admin = await signedInUser(world.portal, { organisationId: orgId, role: 'org_admin' });
    const platformAdmin = await signedInUser(world.portal, { organisationId: orgId, role: 'platform_admin' });
    const nobody = await admin.client.postJson('/dashboard/admin/organisation/billing-user', { user_id: 2_000_000_000 });
    const higher = await admin.client.postJson('/dashboard/admin/organisation/billing-user', { user_id: platformAdmin.id });
    expect(higher.status).toBe(404);
    const body = async (res: Response) => (await res.text()).replace(/"request_id":"[^"]*"/g, '');
    expect(await body(higher)).toBe(await body(nobody));
    expect((await knex()('organisations').where({ id: orgId }).first('billing_user_id')).billing_user_id).toBeNull();
    // The platform admin may nominate themselves.
    expect(
      (await platformAdmin.client.postJson('/dashboard/admin/organisation/billing-user', { user_id: platformAdmin.id, org_id: orgId }))
        .status,
    ).toBe(200);
  });

  // Found by an outside probe: an org admin credited a member (allowed: that wallet did not pay for
  // her keys), nominated the member billing user, and spent the credit on her own keys.
  it('refuses an org admin a billing user whose credit would then pay for her own keys (nominated or reactivated)', async () => {
    const orgId = await organisation('Acme Credit');
    const ivy = await signedInUser(world.portal, { organisationId: orgId, role: 'org_admin' });
    const kai = await signedInUser(world.portal, { organisationId: orgId });
    const platform = await signedInUser(world.portal, { role: 'platform_admin' });
    const key = (await (await ivy.client.postJson('/dashboard/keys/new', { name: 'ivy' })).json()) as {
      key: { gateway_key_id: string };
      secret: string;
    };
    const credit = (usd: number | '') => ivy.client.postJson(`/dashboard/admin/users/${kai.id}/credit-limit`, { credit_limit_usd: usd });
    const nominate = () => ivy.client.postJson('/dashboard/admin/organisation/billing-user', { user_id: kai.id });
    const setStatus = (by: typeof ivy, status: string) => by.client.postJson(`/dashboard/admin/users/${kai.id}/status`, { status });
    const facts = async () => ({
      billing_user: ((await knex()('organisations').where({ id: orgId }).first('billing_user_id')) as { billing_user_id: number | null })
        .billing_user_id,
      payer: ((await knex()('api_keys').where({ id: key.key.gateway_key_id }).first('payer_id')) as { payer_id: string }).payer_id,
      kai: (await knex()('users').where({ id: kai.id }).first('status', 'credit_limit_usd')) as {
        status: string;
        credit_limit_usd: string | null;
      },
    });

    expect((await credit(100)).status).toBe(200);
    const refused = await nominate();
    const body = (await refused.json()) as { error: { code: string; param: string; human_message: string; message: string } };
    expect(refused.status, JSON.stringify(body)).toBe(403);
    expect(body.error).toMatchObject({ code: 'forbidden', param: 'user_id' });
    expect(body.error.message).toBe(`forbidden - ${body.error.human_message}`);
    expect(body.error.human_message).toContain('credit you may not give yourself');
    expect(await facts()).toMatchObject({ billing_user: null, payer: `user:${ivy.id}` });
    // Her own wallet is empty and Kai's credit is out of reach: the gateway refuses her key.
    expect(await served(key.secret)).toBe('billing_limit_reached');

    // Without credit the nomination stands, and then the credit is not hers to give (as before).
    expect((await credit('')).status).toBe(200);
    expect((await nominate()).status).toBe(200);
    expect(await facts()).toMatchObject({ billing_user: kai.id, payer: `user:${kai.id}` });
    expect((await credit(100)).status).toBe(403);

    // Suspended, Kai pays for nobody, so crediting her is allowed; reactivating her would spend it.
    expect((await setStatus(ivy, 'suspended')).status).toBe(200);
    expect((await credit(50)).status).toBe(200);
    const reactivated = await setStatus(ivy, 'active');
    expect(reactivated.status).toBe(403);
    expect(await reactivated.json()).toMatchObject({ error: { code: 'forbidden', param: 'status' } });
    expect(await facts()).toMatchObject({ payer: `user:${ivy.id}`, kai: { status: 'suspended' } });
    expect(await served(key.secret)).toBe('billing_limit_reached');
    // A platform administrator may give credit anywhere, so may reactivate her with it.
    expect((await setStatus(platform, 'active')).status).toBe(200);
    expect(await facts()).toMatchObject({ billing_user: kai.id, payer: `user:${kai.id}`, kai: { status: 'active' } });
  });

  it('an org admin crediting a member and nominating her at the same time never gets both', async () => {
    const orgId = await organisation('Acme Race');
    const ivy = await signedInUser(world.portal, { organisationId: orgId, role: 'org_admin' });
    const kai = await signedInUser(world.portal, { organisationId: orgId });
    for (let round = 0; round < 6; round++) {
      const [credited, nominated] = await Promise.all([
        ivy.client.postJson(`/dashboard/admin/users/${kai.id}/credit-limit`, { credit_limit_usd: 10 }),
        ivy.client.postJson('/dashboard/admin/organisation/billing-user', { user_id: kai.id }),
      ]);
      const state = (await knex()('users as u')
        .join('organisations as o', 'o.id', 'u.organisation_id')
        .where('u.id', kai.id)
        .first('u.credit_limit_usd', 'o.billing_user_id')) as { credit_limit_usd: string | null; billing_user_id: number | null };
      expect([credited.status, nominated.status].sort(), JSON.stringify(state)).toEqual([200, 403]);
      expect(state.billing_user_id !== null && Number(state.credit_limit_usd ?? 0) > 0, JSON.stringify(state)).toBe(false);
      await knex()('organisations').where({ id: orgId }).update({ billing_user_id: null });
      await knex()('users').where({ id: kai.id }).update({ credit_limit_usd: null });
    }
  });

  it("sends the payer's billing mail to the organisation's billing email as well", async () => {
    const orgId = await organisation('Mail Org');
    const admin = await signedInUser(world.portal, { organisationId: orgId, role: 'org_admin' });
    expect((await admin.client.postJson('/dashboard/admin/organisation/settings', { billing_email: 'not an address' })).status).toBe(422);
    const saved = await admin.client.postJson('/dashboard/admin/organisation/settings', { billing_email: 'finance@acme.example' });
    expect(await saved.json()).toMatchObject({ organisation: { billing_email: 'finance@acme.example' } });
    await admin.client.postJson('/dashboard/admin/organisation/billing-user', { user_id: admin.id });

    const { url } = await startCheckout(admin.client, 7);
    expect(await world.double.payOnHostedPage(url, '4000 0000 0000 0002')).toEqual({ refused: 'Your card was declined.' });
    await waitFor('the failure email to the billing email', () =>
      world.portal.mail.some((m) => m.includes('email to finance@acme.example ("Your payment failed")')),
    );
    expect(world.portal.mail.some((m) => m.includes(`email to ${admin.email} ("Your payment failed")`))).toBe(true);

    // A member topping up the billing user's wallet: the receipt goes to the member who paid, to
    // the wallet's holder and to the billing email (review: it went to the member only).
    const member = await signedInUser(world.portal, { organisationId: orgId });
    const paid = await startCheckout(member.client, 9);
    expect(await world.double.payOnHostedPage(paid.url, '4242 4242 4242 4242')).not.toHaveProperty('refused');
    const receipt = (to: string) => `email to ${to} ("Receipt: $9.00 added to the wallet")`;
    for (const to of [member.email, admin.email, 'finance@acme.example'])
      await waitFor(`the receipt to ${to}`, () => world.portal.mail.some((m) => m.includes(receipt(to))));
  });
});

describe("a member's top-up of the billing user's wallet", () => {
  it('names the wallet credited — the review and the confirmation said "your wallet" and showed another wallet\'s balance as the new one', async () => {
    const orgId = await organisation('Acme Topups');
    const admin = await signUp(world.portal, { organisationId: orgId, role: 'org_admin', name: 'Bea Billing' });
    const member = await signedInUser(world.portal, { organisationId: orgId });
    await admin.client.postJson('/dashboard/admin/organisation/billing-user', { user_id: admin.id });
    await fund(`user:${admin.id}`, 15);
    const wallet = `the billing wallet of Acme Topups (Bea Billing, ${admin.email})`;

    const review = await (await member.client.get('/dashboard/billing/fund?amount=5')).text();
    expect(review).toContain('Funds go to your organisation&#39;s billing user&#39;s wallet');
    expect(review).toContain(`<dt>Added to ${wallet}</dt><dd data-testid="credit">$5.00</dd>`);
    expect(review).not.toContain('Added to your wallet');

    const { url } = await startCheckout(member.client, 5);
    const outcome = await world.double.payOnHostedPage(url);
    if (!('redirect' in outcome)) throw new Error(`refused: ${outcome.refused}`);
    const confirmation = new URL(outcome.redirect);
    let html = '';
    await waitFor('the confirmation to show the credit', async () => {
      html = await (await member.client.get(confirmation.pathname + confirmation.search)).text();
      return html.includes('data-status="credited"');
    });
    expect(html).toContain(`$5.00 was added to ${wallet}.`);
    expect(html).toContain(`<dt>New balance of ${wallet}</dt><dd data-testid="new-balance"><strong>$20.00</strong></dd>`);
    expect(html).not.toContain('added to your wallet');
    // The member's own wallet is untouched: the balance shown is the billing user's.
    expect(await ledgerNano(world.portal, `user:${member.id}`)).toBe(0);
    expect(await ledgerNano(world.portal, `user:${admin.id}`)).toBe(20e9);

    // Their own top-up, once the organisation has no billing user, says "your wallet" as before.
    await admin.client.postJson('/dashboard/admin/organisation/billing-user', { user_id: '' });
    expect(await (await member.client.get('/dashboard/billing/fund?amount=5')).text()).toContain('<dt>Added to your wallet</dt>');
  });
});

/** A call's outcome and, when refused, its error body. */
const attempt = (secret: string) =>
  new OpenAI({ baseURL: `${world.gateway!.gateway.url}/v1`, apiKey: secret, maxRetries: 0 }).chat.completions
    .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'count me against the organisation' }], max_tokens: 8 })
    .then(
      () => ({ served: true as const }),
      (e: unknown) => {
        if (!(e instanceof OpenAI.APIError)) throw e;
        return { served: false as const, status: e.status, error: e.error as { code: string; details?: Record<string, unknown> } };
      },
    );

describe("the organisation's monthly budget", () => {
  it('refuses what would pass it, applies a change from the next request, and never lets concurrent members overspend', async () => {
    const orgId = await organisation('Budgeted Org');
    const admin = await signedInUser(world.portal, { organisationId: orgId, role: 'org_admin' });
    const members = [
      await signedInUser(world.portal, { organisationId: orgId }),
      await signedInUser(world.portal, { organisationId: orgId }),
    ];
    // The organisation pays centrally, so the wallet is never what stops a request here.
    await fund(`user:${admin.id}`, 50);
    await admin.client.postJson('/dashboard/admin/organisation/billing-user', { user_id: admin.id });
    const secrets: string[] = [];
    for (const m of members)
      for (let i = 0; i < 2; i++)
        secrets.push(((await (await m.client.postJson('/dashboard/keys/new', { name: `svc ${i}` })).json()) as { secret: string }).secret);

    // Below one request's worst case: refused, saying it is the organisation's budget.
    for (const bad of [{ monthly_budget: -1 }, { monthly_budget: 'lots' }, { monthly_budget: '1.1234567' }, {}])
      expect((await admin.client.postJson('/dashboard/admin/organisation/monthly-budget', bad)).status, JSON.stringify(bad)).toBe(422);
    expect((await members[0]!.client.postJson('/dashboard/admin/organisation/monthly-budget', { monthly_budget: 100 })).status).toBe(403);
    const tiny = await admin.client.postJson('/dashboard/admin/organisation/monthly-budget', { monthly_budget: '0.000001' });
    expect(await tiny.json()).toMatchObject({ organisation: { monthly_budget: 0.000001 } });
    const refused = await attempt(secrets[0]!);
    expect(refused).toMatchObject({ served: false, status: 402, error: { code: 'budget_exceeded' } });
    if (refused.served) throw new Error('served');
    expect(refused.error.details).toMatchObject({ scope: 'organisation', organisation_id: orgId, budget_limit: 0.000001 });
    const reserve = Number(refused.error.details!.reserve_usd);
    expect(reserve).toBeGreaterThan(0);

    // Removing the budget applies at once on every gateway replica (the cap is in the store).
    await admin.client.postJson('/dashboard/admin/organisation/monthly-budget', { monthly_budget: '' });
    await waitFor('the gateway to serve without a budget', async () => (await attempt(secrets[1]!)).served, 1_000);

    // Room for about three more worst cases: 24 concurrent requests over four keys of two members.
    const spentSoFar = async () =>
      Number(
        (
          (await knex()('audit_log')
            .whereIn('key_id', knex()('api_keys').select('id').where({ organisation_id: orgId }))
            .sum({ usd: 'cost_usd' })
            .first()) as { usd: string | null }
        ).usd ?? 0,
      );
    await waitFor('the served request in the audit log', async () => (await spentSoFar()) > 0);
    const cap = Math.ceil(((await spentSoFar()) + 3.5 * reserve) * 1e6) / 1e6;
    await admin.client.postJson('/dashboard/admin/organisation/monthly-budget', { monthly_budget: cap });
    const outcomes = await Promise.all(Array.from({ length: 24 }, (_, i) => attempt(secrets[i % secrets.length]!)));
    const served = outcomes.filter((o) => o.served).length;
    expect(served).toBeGreaterThanOrEqual(1);
    expect(served).toBeLessThan(24);
    for (const o of outcomes) if (!o.served) expect(o.error.code).toBe('budget_exceeded');
    await waitFor('every served request in the audit log', async () => {
      const rows = await knex()('audit_log')
        .whereIn('key_id', knex()('api_keys').select('id').where({ organisation_id: orgId }))
        .andWhere({ status: 200 })
        .count({ n: '*' });
      return Number(rows[0]!.n) === served + 1;
    });
    expect(await spentSoFar()).toBeLessThanOrEqual(cap);

    // The billing page shows the budget and this month's spend to the organisation's administrator.
    const page = await (await admin.client.get('/dashboard/billing')).text();
    expect(page).toContain('Monthly budget (USD)');
    expect(page).toMatch(/data-testid="organisation-spent">\$[0-9.]+</);
  });
});
