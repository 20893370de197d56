// Promotion grants against a real gateway sharing the portal's database and store: a grant
// credits the wallet once (a resubmitted form creates nothing new) and the gateway serves the
// user from it at once; revoking or expiring withdraws exactly the unspent part, once; bad input
// is a 422 naming the field, and only platform admins may grant.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import type { PortalHarness } from '../support/portal-harness.js';
import type { GatewayHarness } from '../support/gateway-harness.js';
import { signUp, startPortalWithGateway, type SignedInUser } from '../support/portal-users.js';
import { waitFor } from '../support/wait-for.js';
import { userScopeOf } from '../../core/identity/index.js';
import { listGrants } from '../../core/promotions/index.js';

let world: Awaited<ReturnType<typeof startPortalWithGateway>>;
let portal: PortalHarness;
let gateway: GatewayHarness;
let platform: SignedInUser;
const knex = () => portal.database.knex;

interface Grant {
  id: number;
  amount_usd: number;
  status: string;
  withdrawn_usd: number;
  expires_at: string | null;
}

const ledgerNano = async (payer: string) => {
  const [row] = await knex()('wallet_entries')
    .where({ payer_id: payer })
    .sum({ n: knex().raw('coalesce(amount_nano, amount_micro * 1000)') });
  return Number((row as { n: string | null }).n ?? 0);
};

const grant = async (body: Record<string, unknown>, status = 201) => {
  const res = await platform.client.postJson('/dashboard/admin/promotions/create', body);
  expect(res.status, await res.clone().text()).toBe(status);
  return ((await res.json()) as { grant: Grant }).grant;
};

async function userWithKey() {
  const user = await signUp(portal);
  const { secret } = (await (await user.client.postJson('/dashboard/keys/new', { name: 'promo key' })).json()) as { secret: string };
  const sdk = new OpenAI({ baseURL: `${gateway.gateway.url}/v1`, apiKey: secret, maxRetries: 0 });
  const chat = () =>
    sdk.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'spend a little' }], max_tokens: 20 }).then(
      () => 'ok',
      (e: unknown) => (e instanceof OpenAI.APIError ? `${e.status} ${String(e.code)}` : 'error'),
    );
  return { user, chat, payer: `user:${user.id}` };
}

/** Waits until every debit of the payer's requests reached the ledger (the audit writer is asynchronous). */
const settled = async (payer: string, requests: number) =>
  waitFor(`${requests} debits of ${payer} in the ledger`, async () => {
    const [row] = await knex()('wallet_entries').where({ payer_id: payer, kind: 'debit' }).whereNull('reference').count({ n: '*' });
    return Number((row as { n: string }).n) === requests;
  });

beforeAll(async () => {
  world = await startPortalWithGateway();
  ({ portal, gateway } = world);
  platform = await signUp(portal, { role: 'platform_admin' });
});
afterAll(async () => {
  await world?.close();
});

describe('promotions', () => {
  it('a grant credits the wallet once and the gateway serves from it; revoking withdraws the unspent part once', async () => {
    const { user, chat, payer } = await userWithKey();
    expect(await chat()).toBe('403 billing_limit_reached'); // an empty wallet
    const first = await grant({ email: user.email.toUpperCase(), amount_usd: '0.5', reason: 'Launch offer', nonce: 'form-nonce-0001' });
    expect(first).toMatchObject({ amount_usd: 0.5, status: 'active', withdrawn_usd: 0 });
    // The same form submitted again: the same grant, no second credit.
    const again = await grant({ email: user.email, amount_usd: '0.5', reason: 'Launch offer', nonce: 'form-nonce-0001' }, 200);
    expect(again.id).toBe(first.id);
    expect(await ledgerNano(payer)).toBe(500_000_000);

    await waitFor('the gateway to serve from the promotional credit', async () => (await chat()) === 'ok', 5_000, 25);
    expect(await chat()).toBe('ok');
    await settled(payer, 2);
    const spent = 500_000_000 - (await ledgerNano(payer));
    expect(spent).toBeGreaterThan(0);

    const revoked = await platform.client.postJson(`/dashboard/admin/promotions/${first.id}/update`, { action: 'revoke' });
    expect(revoked.status, await revoked.clone().text()).toBe(200);
    const ended = ((await revoked.json()) as { grant: Grant }).grant;
    expect(ended.status).toBe('revoked');
    expect(Math.round(ended.withdrawn_usd * 1e9)).toBe(500_000_000 - spent);
    expect(await ledgerNano(payer)).toBe(0);
    expect((await platform.client.postJson(`/dashboard/admin/promotions/${first.id}/update`, { action: 'revoke' })).status).toBe(409);
    await waitFor('the gateway to refuse again', async () => (await chat()) === '403 billing_limit_reached', 5_000, 25);
  });

  it('a nonce sent again with another user, amount or administrator is a 409 that grants nothing; the same request again is the first grant', async () => {
    const first = await signUp(portal);
    const second = await signUp(portal);
    const other = await signUp(portal, { role: 'platform_admin' });
    const body = { user_id: first.id, amount_usd: '1.25', reason: 'Beta', nonce: 'reused-nonce-0001' };
    const granted = await grant(body);
    const grantsBefore = await knex()('promotion_grants').count({ n: '*' });
    for (const [change, client, differs] of [
      [{ user_id: second.id }, platform.client, 'user'],
      [{ email: second.email, user_id: undefined }, platform.client, 'user'],
      [{ amount_usd: '100' }, platform.client, 'amount'],
      [{ user_id: second.id, amount_usd: '2' }, platform.client, 'user and amount'],
      [{}, other.client, 'administrator'],
    ] as const) {
      const res = await client.postJson('/dashboard/admin/promotions/create', { ...body, ...change });
      expect(res.status, JSON.stringify(change)).toBe(409);
      const answer = (await res.json()) as { code: string; human_message: string; error: { param: string } };
      expect(answer).toMatchObject({ code: 'conflict', error: { param: 'nonce' } });
      expect(answer.human_message).toContain(`another ${differs}`);
    }
    // The form (HTML) is told too, with the page and the problem.
    const page = await platform.client.postForm(
      '/dashboard/admin/promotions/create',
      { user_id: String(second.id), amount_usd: '1.25', reason: 'Beta', nonce: 'reused-nonce-0001' },
      { accept: 'text/html' },
    );
    expect(page.status).toBe(409);
    expect(await page.text()).toContain('This nonce was already used');
    expect(await knex()('promotion_grants').count({ n: '*' })).toEqual(grantsBefore);
    expect(await ledgerNano(`user:${second.id}`)).toBe(0);
    expect(await ledgerNano(`user:${first.id}`)).toBe(1_250_000_000);
    // The same request again, also a few at once: the first grant, no new credit.
    const again = await Promise.all(Array.from({ length: 4 }, () => grant(body, 200)));
    expect(again.map((g) => g.id)).toEqual(Array(4).fill(granted.id));
    expect(await ledgerNano(`user:${first.id}`)).toBe(1_250_000_000);
    // A new nonce sent several times at once (a double click): one grant, one credit, every answer names it.
    const raced = await Promise.all(
      Array.from({ length: 4 }, () =>
        platform.client.postJson('/dashboard/admin/promotions/create', { ...body, user_id: second.id, nonce: 'raced-nonce-0001' }),
      ),
    );
    expect(raced.map((r) => r.status).sort()).toEqual([200, 200, 200, 201]);
    const ids = await Promise.all(raced.map(async (r) => ((await r.json()) as { grant: Grant }).grant.id));
    expect(new Set(ids).size).toBe(1);
    expect(await ledgerNano(`user:${second.id}`)).toBe(1_250_000_000);
  });

  // Outside probe: a top-up refunded (or a dispute hold, won later) after a grant counted as
  // spending the grant, so revoking it left the user money nobody paid.
  it('a card refund or a dispute hold after a grant is not spending of it: revoking withdraws the grant unspent', async () => {
    const { user, payer } = await userWithKey();
    const promo = await grant({ user_id: user.id, amount_usd: 5, reason: 'Refund case' });
    await knex()('wallet_entries').insert([
      {
        payer_id: payer,
        amount_nano: 2_000_000_000,
        amount_micro: 2_000_000,
        kind: 'credit',
        reason: 'top-up',
        actor: 'test',
        reference: `checkout:cs_probe_${promo.id}`,
      },
      {
        payer_id: payer,
        amount_nano: -2_000_000_000,
        amount_micro: -2_000_000,
        kind: 'debit',
        reason: 'refund',
        actor: 'test',
        reference: `refund:ch_probe_${promo.id}:2000`,
      },
      {
        payer_id: payer,
        amount_nano: 3_000_000_000,
        amount_micro: 3_000_000,
        kind: 'credit',
        reason: 'top-up',
        actor: 'test',
        reference: `checkout:cs_probe2_${promo.id}`,
      },
      {
        payer_id: payer,
        amount_nano: -3_000_000_000,
        amount_micro: -3_000_000,
        kind: 'debit',
        reason: 'dispute',
        actor: 'test',
        reference: `dispute:dp_probe_${promo.id}`,
      },
      {
        payer_id: payer,
        amount_nano: 3_000_000_000,
        amount_micro: 3_000_000,
        kind: 'credit',
        reason: 'dispute won',
        actor: 'test',
        reference: `dispute_won:dp_probe_${promo.id}`,
      },
    ]);
    const revoked = await platform.client.postJson(`/dashboard/admin/promotions/${promo.id}/update`, { action: 'revoke' });
    expect(revoked.status, await revoked.clone().text()).toBe(200);
    expect(((await revoked.json()) as { grant: Grant }).grant.withdrawn_usd).toBe(5);
    // Left: the 3 USD paid and kept (the refunded 2 went back to the card).
    expect(await ledgerNano(payer)).toBe(3_000_000_000);
  });

  it('an expired grant gives back its unspent part once, never more than the wallet holds', async () => {
    const { user, payer } = await userWithKey();
    const promo = await grant({ user_id: user.id, amount_usd: 2, reason: 'Trial', expires_at: '2999-01-01' });
    expect(promo.expires_at).toBe('2999-01-01T23:59:59.999Z');
    // The user also pays in 1 USD and spends 2.5 USD of the 3 (debits written directly: ledger arithmetic only).
    await knex()('wallet_entries').insert([
      { payer_id: payer, amount_nano: 1_000_000_000, amount_micro: 1_000_000, kind: 'credit', reason: 'top-up', actor: 'test' },
      { payer_id: payer, amount_nano: -2_500_000_000, amount_micro: -2_500_000, kind: 'debit', reason: 'usage', actor: 'test' },
    ]);
    await knex()('promotion_grants')
      .where({ id: promo.id })
      .update({ expires_at: new Date(Date.now() - 1000) });
    const list = async () =>
      ((await (await platform.client.get('/dashboard/admin/promotions', { accept: 'application/json' })).json()) as { data: Grant[] }).data;
    const expired = (await list()).find((g) => g.id === promo.id)!;
    // Spent 2.5 since the grant: the 2 USD grant is spent in full, nothing to take back.
    expect(expired).toMatchObject({ status: 'expired', withdrawn_usd: 0 });
    expect(await ledgerNano(payer)).toBe(500_000_000);

    const second = await grant({ user_id: user.id, amount_usd: 3, reason: 'Second trial', expires_at: '2999-01-01' });
    await knex()('wallet_entries').insert({
      payer_id: payer,
      amount_nano: -1_000_000_000,
      amount_micro: -1_000_000,
      kind: 'debit',
      reason: 'usage',
      actor: 'test',
    });
    await knex()('promotion_grants')
      .where({ id: second.id })
      .update({ expires_at: new Date(Date.now() - 1000) });
    await list();
    await list(); // a second sweep changes nothing
    const after = (await list()).find((g) => g.id === second.id)!;
    expect(after).toMatchObject({ status: 'expired', withdrawn_usd: 2 }); // 3 granted, 1 spent since
    expect(await ledgerNano(payer)).toBe(500_000_000);
    const [withdrawals] = await knex()('wallet_entries')
      .where({ reference: `promotion:${second.id}:withdrawal` })
      .count({ n: '*' });
    expect(Number((withdrawals as { n: string }).n)).toBe(1);
  });

  /** A grant within a platform admin's reach and one out of it (an owner's grant to another owner). */
  const grantsAroundReach = async () => {
    // The users routes' reach (docs/administration.md "Reach"): an owner is out of a platform admin's reach.
    const owner = await signUp(portal, { role: 'owner' });
    const higher = await signUp(portal, { role: 'owner' });
    const member = await signUp(portal);
    const low = await grant({ user_id: member.id, amount_usd: 1, reason: 'Within reach' });
    const res = await owner.client.postJson('/dashboard/admin/promotions/create', {
      user_id: higher.id,
      amount_usd: 7,
      reason: 'Owner to owner',
    });
    expect(res.status, await res.clone().text()).toBe(201);
    const high = ((await res.json()) as { grant: Grant }).grant;
    return { owner, higher, member, low, high };
  };

  it("grants of a user above the caller's role are not listed, nor counted in the list's limit", async () => {
    const { owner, higher, member, low, high } = await grantsAroundReach();
    const ids = async (client: typeof platform.client) =>
      ((await (await client.get('/dashboard/admin/promotions', { accept: 'application/json' })).json()) as { data: Grant[] }).data.map(
        (g) => g.id,
      );
    expect(await ids(platform.client)).toContain(low.id);
    expect(await ids(platform.client)).not.toContain(high.id);
    const page = await (await platform.client.get('/dashboard/admin/promotions', { accept: 'text/html' })).text();
    expect(page).toContain(member.email);
    expect(page).not.toContain(higher.email);
    expect(page).not.toContain('Owner to owner');
    expect(await ids(owner.client)).toEqual(expect.arrayContaining([low.id, high.id]));
    // The limit counts only grants within reach: the newer one out of reach does not take the only place.
    const platformAdmin = { id: platform.id, role: 'platform_admin', status: 'active', organisationId: null, departmentId: null } as const;
    expect((await listGrants(knex(), userScopeOf(platformAdmin), 1)).map((g) => g.id)).toEqual([low.id]);
  });

  it("changing or revoking a grant of a user above the caller's role is 404, word for word as for no grant", async () => {
    const { owner, higher, high } = await grantsAroundReach();
    const text = async (r: Response) => {
      expect(r.status).toBe(404);
      return (await r.text()).replace(/"request_id":"[^"]*"/g, '');
    };
    for (const body of [{ action: 'revoke' }, { reason: 'Mine now' }, { expires_at: '2999-01-01' }, { expires_at: '' }])
      expect(await text(await platform.client.postJson(`/dashboard/admin/promotions/${high.id}/update`, body)), JSON.stringify(body)).toBe(
        await text(await platform.client.postJson('/dashboard/admin/promotions/999999/update', body)),
      );
    expect(await knex()('promotion_grants').where({ id: high.id }).first('status', 'reason', 'expires_at')).toEqual({
      status: 'active',
      reason: 'Owner to owner',
      expires_at: null,
    });
    expect(await ledgerNano(`user:${higher.id}`)).toBe(7_000_000_000);
    // An owner still may.
    expect((await owner.client.postJson(`/dashboard/admin/promotions/${high.id}/update`, { action: 'revoke' })).status).toBe(200);
  });

  it('refuses bad input naming the field, and everyone below platform admin', async () => {
    const user = await signUp(portal);
    for (const [body, field] of [
      [{ user_id: user.id, amount_usd: 0, reason: 'x' }, 'amount_usd'],
      [{ user_id: user.id, amount_usd: '-1', reason: 'x' }, 'amount_usd'],
      [{ user_id: user.id, amount_usd: 100001, reason: 'x' }, 'amount_usd'],
      [{ user_id: user.id, amount_usd: '1.1234567', reason: 'x' }, 'amount_usd'],
      [{ user_id: user.id, amount_usd: 1, reason: '' }, 'reason'],
      [{ user_id: user.id, email: user.email, amount_usd: 1, reason: 'x' }, 'user_id'],
      [{ user_id: user.id, amount_usd: 1, reason: 'x', expires_at: 'soon' }, 'expires_at'],
      [{ user_id: user.id, amount_usd: 1, reason: 'x', expires_at: '2001-01-01' }, 'expires_at'],
      // Days that do not exist are refused, not rolled over into the next month; five-digit years too.
      [{ user_id: user.id, amount_usd: 1, reason: 'x', expires_at: '2027-02-30' }, 'must be a real date'],
      [{ user_id: user.id, amount_usd: 1, reason: 'x', expires_at: '2027-04-31T10:00:00Z' }, 'must be a real date'],
      [{ user_id: user.id, amount_usd: 1, reason: 'x', expires_at: '99999-01-01' }, 'must be a real date'],
      [{ user_id: user.id, amount_usd: 1, reason: 'x', expires_at: '+275760-09-13T00:00:00Z' }, 'must be a real date'],
    ] as const) {
      const res = await platform.client.postJson('/dashboard/admin/promotions/create', body);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(await res.text()).toContain(field);
    }
    expect(
      (await platform.client.postJson('/dashboard/admin/promotions/create', { email: 'nobody@example.com', amount_usd: 1, reason: 'x' }))
        .status,
    ).toBe(404);
    expect((await platform.client.postJson('/dashboard/admin/promotions/999999/update', { action: 'revoke' })).status).toBe(404);
    const orgAdmin = await signUp(portal, { role: 'org_admin' });
    expect(
      (await orgAdmin.client.postJson('/dashboard/admin/promotions/create', { user_id: orgAdmin.id, amount_usd: 1, reason: 'me' })).status,
    ).toBe(403);
    // Nobody credits their own wallet, by id or by email; a grant of theirs cannot be extended either.
    const self = await platform.client.postJson('/dashboard/admin/promotions/create', {
      user_id: platform.id,
      amount_usd: 1000,
      reason: 'me',
    });
    expect(self.status).toBe(403);
    expect(await self.text()).toContain('yourself');
    expect(
      (
        await platform.client.postJson('/dashboard/admin/promotions/create', {
          email: platform.email.toUpperCase(),
          amount_usd: 1,
          reason: 'me',
        })
      ).status,
    ).toBe(403);
    const other = await signUp(portal, { role: 'platform_admin' });
    const theirs = (await (
      await other.client.postJson('/dashboard/admin/promotions/create', { user_id: platform.id, amount_usd: 1, reason: 'from a colleague' })
    ).json()) as { grant: Grant };
    expect(
      (await platform.client.postJson(`/dashboard/admin/promotions/${theirs.grant.id}/update`, { expires_at: '2999-01-01' })).status,
    ).toBe(403);
    expect((await platform.client.postJson(`/dashboard/admin/promotions/${theirs.grant.id}/update`, { action: 'revoke' })).status).toBe(
      200,
    );
    const page = await (await platform.client.get('/dashboard/admin/promotions')).text();
    expect(page).toContain('data-testid="promotion-form"');
    expect(page).toContain('data-testid="promotions-table"');
  });
});
