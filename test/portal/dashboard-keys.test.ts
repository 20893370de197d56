// The dashboard's key pages against a real gateway sharing the portal's database and store (as
// `npm start` runs them): a key created in the portal answers at the gateway at once through the
// official openai SDK, a suspend or revoke in the portal is refused by the gateway within a
// second, members never see another member's or organisation's keys (404, never 403, so ids do
// not leak), admins see their scope, Kubernetes keys are read-only, bad input is 422.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { KeyRepository } from '../../core/keys/index.js';
import { OrganisationRepository } from '../../core/identity/index.js';
import { PortalClient } from '../support/portal-client.js';
import { harnessSecrets, type PortalHarness } from '../support/portal-harness.js';
import type { GatewayHarness } from '../support/gateway-harness.js';
import { fundWallet, signUp, startPortalWithGateway, type SignedInUser } from '../support/portal-users.js';
import { waitFor } from '../support/wait-for.js';

let world: Awaited<ReturnType<typeof startPortalWithGateway>>;
let portal: PortalHarness;
let gateway: GatewayHarness;
beforeAll(async () => {
  world = await startPortalWithGateway();
  ({ portal, gateway } = world);
});
afterAll(async () => {
  await world?.close();
});

/** A verified, signed-in user whose wallet holds `fundUsd` (default 100): the keys here are paid from it. */
async function signedIn(
  setup: { organisationId?: number; departmentId?: number; role?: string; fundUsd?: number } = {},
): Promise<SignedInUser> {
  const user = await signUp(portal, setup);
  if ((setup.fundUsd ?? 100) > 0) await fundWallet(gateway, `user:${user.id}`, setup.fundUsd ?? 100);
  return user;
}

const fund = (payer: string, usd: number) => fundWallet(gateway, payer, usd);

async function createKey(client: PortalClient, body: Record<string, unknown> = {}) {
  const res = await client.postJson('/dashboard/keys/new', { name: 'checkout service', ...body });
  expect(res.status, await res.clone().text()).toBe(201);
  return (await res.json()) as { key: { key_id: number; gateway_key_id: string; status: string }; secret: string };
}

const chat = (secret: string) =>
  new OpenAI({ baseURL: `${gateway.gateway.url}/v1`, apiKey: secret, maxRetries: 0 }).chat.completions.create({
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'hello' }],
    max_tokens: 5,
  });

/** Whether a call with this key is refused with `status`. */
const refusedWith = (secret: string, status: number) =>
  chat(secret).then(
    () => false,
    (e: unknown) => e instanceof OpenAI.APIError && e.status === status,
  );

/**
 * Changes travel by store announcement (milliseconds); the bound leaves room for a loaded CI
 * machine while still proving the change is pushed, not waited out (the key cache lives 10 min).
 */
const propagation = 2_000;

describe('a key created in the dashboard', () => {
  it('answers at the gateway at once, and stops within a second of a suspend or a revoke in the dashboard', async () => {
    const { client } = await signedIn();
    const { key, secret } = await createKey(client, { budget_limit: '5', rate_limit_rpm: '100', allowed_models: 'gpt-4o-mini' });
    expect(secret).toMatch(/^svc-sk-/);
    expect(key.status).toBe('active');
    const reply = await chat(secret);
    expect(reply.choices[0]?.message.content).toBeTruthy();

    // The detail shows the policy and, after the call, the spend; never the secret.
    const detail = await client.get(`/dashboard/keys/${key.key_id}`, { accept: 'application/json' });
    const shown = (await detail.json()) as Record<string, unknown>;
    expect(shown).toMatchObject({
      key_id: key.key_id,
      budget_limit: 5,
      budget_period: 'monthly',
      rate_limit_rpm: 100,
      allowed_models: ['gpt-4o-mini'],
    });
    expect(JSON.stringify(shown)).not.toContain(secret);

    expect((await client.postForm(`/dashboard/keys/${key.key_id}`, { action: 'suspend' })).status).toBe(303);
    await waitFor('the gateway to refuse the key with 403', () => refusedWith(secret, 403), propagation);
    expect((await client.postForm(`/dashboard/keys/${key.key_id}`, { action: 'resume' })).status).toBe(303);
    await waitFor(
      'the gateway to accept the resumed key',
      () =>
        chat(secret).then(
          () => true,
          () => false,
        ),
      propagation,
    );

    expect((await client.postForm(`/dashboard/keys/${key.key_id}`, { action: 'revoke' })).status).toBe(303);
    await waitFor('the gateway to refuse the revoked key with 401', () => refusedWith(secret, 401), propagation);
    // A revoked key is final.
    const again = await client.postJson(`/dashboard/keys/${key.key_id}`, { action: 'resume' });
    expect(again.status).toBe(409);
  });

  it("is paid from the owner's effective payer: their wallet, their organisation's billing user, none when exempt", async () => {
    const knex = portal.database.knex;
    // An unfunded member: the key is charged to their own wallet and refused until it holds money.
    const alone = await signedIn({ fundUsd: 0 });
    const own = await createKey(alone.client);
    const shown = (await (await alone.client.get(`/dashboard/keys/${own.key.key_id}`, { accept: 'application/json' })).json()) as {
      payer_id: string;
    };
    expect(shown.payer_id).toBe(`user:${alone.id}`);
    // The page says whose wallet in words; the id stays for whoever needs the Management API's.
    const ownPage = await (await alone.client.get(`/dashboard/keys/${own.key.key_id}`, { accept: 'text/html' })).text();
    expect(ownPage).toMatch(/data-testid="key-payer">Paid from <span title="user:\d+">your own wallet<\/span>/);
    const refusal = await chat(own.secret).catch((e: unknown) => e);
    expect(refusal).toBeInstanceOf(OpenAI.APIError);
    expect((refusal as InstanceType<typeof OpenAI.APIError>).status).toBe(403);
    expect((refusal as InstanceType<typeof OpenAI.APIError>).code).toBe('billing_limit_reached');
    await fund(`user:${alone.id}`, 1);
    await waitFor(
      'the funded wallet to serve the key',
      () =>
        chat(own.secret).then(
          () => true,
          () => false,
        ),
      propagation,
    );

    // A member of an organisation whose nominated billing user pays for everyone.
    const [org] = (await knex('organisations')
      .insert({ name: 'Payer Org', slug: `payer-${Date.now()}` })
      .returning('id')) as { id: number }[];
    const payer = await signedIn({ organisationId: org!.id, role: 'org_admin', fundUsd: 0 });
    await knex('organisations').where({ id: org!.id }).update({ billing_user_id: payer.id });
    const member = await signedIn({ organisationId: org!.id, fundUsd: 0 });
    const paidByOrg = await createKey(member.client);
    expect((await knex('api_keys').where({ id: paidByOrg.key.gateway_key_id }).first('payer_id')).payer_id).toBe(`user:${payer.id}`);
    const memberPage = await (await member.client.get(`/dashboard/keys/${paidByOrg.key.key_id}`, { accept: 'text/html' })).text();
    expect(memberPage).toMatch(
      new RegExp(`Paid from <span title="user:\\d+">the wallet of User \\d+ \\(${payer.email.replaceAll('.', '\\.')}\\)</span>`),
    );

    // A billing-exempt organisation: no wallet is debited.
    await knex('organisations').where({ id: org!.id }).update({ billing_exempt: true });
    const exempt = await createKey(member.client);
    expect((await knex('api_keys').where({ id: exempt.key.gateway_key_id }).first('payer_id')).payer_id).toBeNull();
    // A payer outside the viewer's organisation (the Management API may set anyone) is not named.
    await knex('api_keys')
      .where({ id: own.key.gateway_key_id })
      .update({ payer_id: `user:${payer.id}` });
    const elsewhere = await (await alone.client.get(`/dashboard/keys/${own.key.key_id}`, { accept: 'text/html' })).text();
    expect(elsewhere).toContain('Paid from <span title="user:');
    expect(elsewhere).toContain('another user’s wallet');
    expect(elsewhere).not.toContain(payer.email);
    const exemptPage = await (await member.client.get(`/dashboard/keys/${exempt.key.key_id}`, { accept: 'text/html' })).text();
    expect(exemptPage).toContain('data-testid="key-payer">No wallet is charged (billing-exempt)');
    expect((await chat(exempt.secret)).choices[0]?.message.content).toBeTruthy();
  });

  it('updates the policy from the form and the gateway enforces it', async () => {
    const { client } = await signedIn();
    const { key, secret } = await createKey(client);
    const saved = await client.postForm(`/dashboard/keys/${key.key_id}`, {
      action: 'update',
      name: 'renamed',
      allowed_models: 'gpt-4o',
      allowed_regions: '',
      budget_limit: '',
      budget_period: '',
      rate_limit_rpm: '',
    });
    expect(saved.status).toBe(303);
    expect(saved.headers.get('location')).toBe(`/dashboard/keys/${key.key_id}?notice=updated`);
    const page = await client.get(saved.headers.get('location')!);
    const html = await page.text();
    expect(html).toContain('Key saved');
    expect(html).toContain('renamed');
    await waitFor('the gateway to refuse the key with 403', () => refusedWith(secret, 403), propagation);
  });

  it('a JSON update changes what it names and keeps the rest; a field sent empty lifts its limit', async () => {
    const { client } = await signedIn();
    const { key } = await createKey(client, {
      name: 'capped',
      allowed_models: ['gpt-4o-mini'],
      budget_limit: '0.000000123',
      budget_period: 'daily',
      rate_limit_rpm: 2,
    });
    // Its window is known from the start: the creation's answer names the reset (it was null).
    const fresh = (await (await client.get(`/dashboard/keys/${key.key_id}`, { accept: 'application/json' })).json()) as {
      resets_at: string;
    };
    expect((key as unknown as { resets_at: string | null }).resets_at).toBe(fresh.resets_at);
    expect(fresh.resets_at).not.toBeNull();
    const renamed = await client.postJson(`/dashboard/keys/${key.key_id}`, { action: 'update', name: 'capped, renamed' });
    expect(renamed.status, await renamed.clone().text()).toBe(200);
    expect(await renamed.json()).toMatchObject({
      name: 'capped, renamed',
      allowed_models: ['gpt-4o-mini'],
      budget_limit: 0.000000123,
      budget_period: 'daily',
      rate_limit_rpm: 2,
    });
    const lifted = await client.postJson(`/dashboard/keys/${key.key_id}`, { action: 'update', rate_limit_rpm: null, allowed_models: '' });
    expect(await lifted.json()).toMatchObject({
      name: 'capped, renamed',
      allowed_models: null,
      budget_limit: 0.000000123,
      rate_limit_rpm: null,
    });
    const refused = await client.postJson(`/dashboard/keys/${key.key_id}`, { action: 'update', name: '' });
    expect(refused.status).toBe(422);
    // A model the catalogue has since dropped, in a list the update leaves alone, does not stop a rename.
    await portal.database
      .knex('api_keys')
      .where({ id: key.gateway_key_id })
      .update({ allowed_models: JSON.stringify(['retired-model']) });
    const kept = await client.postJson(`/dashboard/keys/${key.key_id}`, { action: 'update', name: 'after a catalogue change' });
    expect(kept.status, await kept.clone().text()).toBe(200);
    expect(await kept.json()).toMatchObject({ allowed_models: ['retired-model'] });
    expect((await client.postJson(`/dashboard/keys/${key.key_id}`, { action: 'update', allowed_models: ['retired-model'] })).status).toBe(
      422,
    );
  });

  it('pages show money exactly, never rounded up: a remaining budget of $1.123456789, a balance of $9.9998884', async () => {
    const { client } = await signedIn({ fundUsd: 9.9998884 });
    const { key } = await createKey(client, { budget_limit: '1.123456789', budget_period: 'monthly' });
    const detail = await (await client.get(`/dashboard/keys/${key.key_id}`)).text();
    expect(detail).toMatch(/<h2>Remaining<\/h2>.*<p class="stat">\$1\.123456789<\/p>/);
    expect(detail).not.toContain('$1.123457');
    const billing = await (await client.get('/dashboard/billing')).text();
    expect(billing).toContain('data-testid="balance">$9.9998884<');
    expect(billing).not.toContain('$9.999888<');
  });

  it('a field sent null lifts its limit, as one sent empty: null is what the key reads back for "no limit"', async () => {
    const { client } = await signedIn();
    const limits = {
      allowed_models: ['gpt-4o-mini'],
      allowed_regions: ['EU'],
      budget_limit: '5',
      budget_period: 'daily',
      rate_limit_rpm: 2,
    };
    const { key } = await createKey(client, { name: 'limited', ...limits });
    const lifted = await client.postJson(`/dashboard/keys/${key.key_id}`, {
      action: 'update',
      allowed_models: null,
      allowed_regions: null,
      budget_limit: null,
      budget_period: null,
      rate_limit_rpm: null,
    });
    expect(lifted.status, await lifted.clone().text()).toBe(200);
    const none = { allowed_models: null, allowed_regions: null, budget_limit: null, budget_period: null, rate_limit_rpm: null };
    expect(await lifted.json()).toMatchObject({ name: 'limited', ...none });
    // What a GET answers can be sent back as it is.
    const read = (await (await client.get(`/dashboard/keys/${key.key_id}`, { accept: 'application/json' })).json()) as Record<
      string,
      unknown
    >;
    expect(read).toMatchObject(none);
    const again = await client.postJson(`/dashboard/keys/${key.key_id}`, { action: 'update', ...none });
    expect(again.status, await again.clone().text()).toBe(200);
    // A budget sent with a null period is monthly, as one sent with an empty period.
    const budgeted = await client.postJson(`/dashboard/keys/${key.key_id}`, { action: 'update', budget_limit: '5', budget_period: null });
    expect(await budgeted.json()).toMatchObject({ budget_limit: 5, budget_period: 'monthly' });
    // A key can be created with the same nulls.
    const { key: created } = await createKey(client, { name: 'unlimited', ...none });
    expect(created).toMatchObject({ name: 'unlimited', ...none });
  });

  it('shows the secret once in the HTML flow, with no-store caching', async () => {
    const { client } = await signedIn();
    const res = await client.postForm('/dashboard/keys/new', { name: 'from the form', budget_limit: '2.50', budget_period: 'daily' });
    expect(res.status).toBe(201);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const html = await res.text();
    const secret = /value="(svc-sk-[^"]+)"/.exec(html)?.[1];
    expect(secret).toBeDefined();
    const list = await (await client.get('/dashboard/keys')).text();
    expect(list).toContain('from the form');
    expect(list).not.toContain(secret!);
  });

  it('the form sent again (a double click, a reload of the page that shows the secret) opens the key it made, and makes no second key', async () => {
    const { client } = await signedIn();
    const page = await (await client.get('/dashboard/keys/new', { accept: 'text/html' })).text();
    const token = /name="form_token" value="([^"]+)"/.exec(page)?.[1];
    expect(token).toMatch(/^[0-9a-f-]{36}$/);
    const form = { form_token: token!, name: 'sent twice' };
    // A double click: both at once make one key; the second answer opens it.
    const [first, second] = await Promise.all([
      client.postForm('/dashboard/keys/new', form, { accept: 'text/html' }),
      client.postForm('/dashboard/keys/new', form, { accept: 'text/html' }),
    ]);
    expect([first.status, second.status].sort()).toEqual([201, 303]);
    const again = await client.postForm('/dashboard/keys/new', form, { accept: 'text/html' });
    expect(again.status).toBe(303);
    expect(again.headers.get('location')).toMatch(/^\/dashboard\/keys\/\d+\?notice=already_created$/);
    const shown = await (await client.get(again.headers.get('location')!, { accept: 'text/html' })).text();
    expect(shown).toContain('This form was already sent, and this key is what it created');
    const keys = (await (await client.get('/dashboard/keys', { accept: 'application/json' })).json()) as { data: { name: string }[] };
    expect(keys.data.filter((k) => k.name === 'sent twice')).toHaveLength(1);
    // A form refused for its values keeps its token, so correcting it still makes one key.
    const other = /name="form_token" value="([^"]+)"/.exec(
      await (await client.get('/dashboard/keys/new', { accept: 'text/html' })).text(),
    )?.[1];
    expect(other).not.toBe(token);
    const refused = await client.postForm('/dashboard/keys/new', { form_token: other!, name: '' }, { accept: 'text/html' });
    expect(refused.status).toBe(422);
    expect(await refused.text()).toContain(`value="${other!}"`);
  });
});

describe('scope', () => {
  it('a member sees only their own keys; another member gets 404 for them', async () => {
    const a = await signedIn();
    const b = await signedIn();
    const { key } = await createKey(a.client, { name: 'a-only' });
    const listB = (await (await b.client.get('/dashboard/keys', { accept: 'application/json' })).json()) as { data: { key_id: number }[] };
    expect(listB.data.map((k) => k.key_id)).not.toContain(key.key_id);
    for (const res of [
      await b.client.get(`/dashboard/keys/${key.key_id}`, { accept: 'application/json' }),
      await b.client.postJson(`/dashboard/keys/${key.key_id}`, { action: 'revoke' }),
    ]) {
      expect(res.status).toBe(404);
      expect(await res.json()).toMatchObject({ code: 'not_found' });
    }
    const still = (await (await a.client.get(`/dashboard/keys/${key.key_id}`, { accept: 'application/json' })).json()) as {
      status: string;
    };
    expect(still.status).toBe('active');
  });

  it('an org admin sees their organisation’s keys and not another organisation’s; a platform admin sees both', async () => {
    const orgs = new OrganisationRepository(portal.database.knex);
    const now = new Date();
    const acme = await orgs.create('Acme', `acme-${Date.now()}`, now);
    const globex = await orgs.create('Globex', `globex-${Date.now()}`, now);
    const acmeMember = await signedIn({ organisationId: acme.id });
    const globexMember = await signedIn({ organisationId: globex.id });
    const acmeAdmin = await signedIn({ organisationId: acme.id, role: 'org_admin' });
    const platform = await signedIn({ role: 'platform_admin' });
    const acmeKey = (await createKey(acmeMember.client, { name: 'acme key' })).key;
    const globexKey = (await createKey(globexMember.client, { name: 'globex key' })).key;

    const ids = async (c: PortalClient) =>
      (
        (await (await c.get('/dashboard/keys?limit=100', { accept: 'application/json' })).json()) as { data: { key_id: number }[] }
      ).data.map((k) => k.key_id);
    expect(await ids(acmeAdmin.client)).toContain(acmeKey.key_id);
    expect(await ids(acmeAdmin.client)).not.toContain(globexKey.key_id);
    expect((await acmeAdmin.client.get(`/dashboard/keys/${globexKey.key_id}`, { accept: 'application/json' })).status).toBe(404);
    expect((await acmeAdmin.client.postJson(`/dashboard/keys/${acmeKey.key_id}`, { action: 'suspend' })).status).toBe(200);
    const platformIds = await ids(platform.client);
    expect(platformIds).toEqual(expect.arrayContaining([acmeKey.key_id, globexKey.key_id]));
  });

  it('a department admin sees their department’s keys only', async () => {
    const orgs = new OrganisationRepository(portal.database.knex);
    const org = await orgs.create('Initech', `initech-${Date.now()}`, new Date());
    const sales = await orgs.createDepartment(org.id, 'Sales', new Date());
    const ops = await orgs.createDepartment(org.id, 'Ops', new Date());
    const seller = await signedIn({ organisationId: org.id, departmentId: sales });
    const operator = await signedIn({ organisationId: org.id, departmentId: ops });
    const head = await signedIn({ organisationId: org.id, departmentId: sales, role: 'department_admin' });
    const salesKey = (await createKey(seller.client)).key;
    const opsKey = (await createKey(operator.client)).key;
    expect((await head.client.get(`/dashboard/keys/${salesKey.key_id}`, { accept: 'application/json' })).status).toBe(200);
    expect((await head.client.get(`/dashboard/keys/${opsKey.key_id}`, { accept: 'application/json' })).status).toBe(404);
  });

  it('shows a Kubernetes key read-only to a platform admin and refuses changes', async () => {
    const platform = await signedIn({ role: 'platform_admin' });
    const repository = new KeyRepository(portal.database.knex, harnessSecrets.SVC_KEY_PEPPER);
    const { record } = await repository.create({
      kind: 'managed',
      name: 'team-a/analytics',
      source: 'crd',
      managedBy: `ManagedKey/team-a/analytics/${Date.now()}`,
    });
    const page = await (await platform.client.get(`/dashboard/keys/${record.number}`)).text();
    expect(page).toContain('Managed by Kubernetes');
    expect(page).not.toContain('Revoke key');
    const refused = await platform.client.postJson(`/dashboard/keys/${record.number}`, { action: 'revoke' });
    expect(refused.status).toBe(409);
    expect((await repository.findById(record.id))!.status).toBe('active');
  });

  it('sends a signed-out browser to sign in, and an API caller gets invalid_session', async () => {
    const anonymous = new PortalClient(portal.url);
    const page = await anonymous.get('/dashboard/keys');
    expect(page.status).toBe(303);
    expect(page.headers.get('location')).toBe('/login?return_to=%2Fdashboard%2Fkeys');
    const api = await anonymous.postJson('/dashboard/keys/new', { name: 'x' });
    expect(api.status).toBe(401);
  });
});

describe('bad input', () => {
  it('answers 422 naming each bad field, path or query parameter, and creates nothing', async () => {
    const { client, id } = await signedIn();
    const bad = await client.postJson('/dashboard/keys/new', {
      name: '',
      budget_limit: '-1',
      rate_limit_rpm: '1.5',
      budget_period: 'weekly',
      allowed_models: 'no-such-model',
    });
    expect(bad.status).toBe(422);
    const body = (await bad.json()) as { code: string; detail: { loc: string[] }[] };
    expect(body.code).toBe('validation_error');
    expect(body.detail.map((d) => d.loc[1]).sort()).toEqual(['budget_limit', 'budget_period', 'name', 'rate_limit_rpm']);
    const unknownModel = await client.postJson('/dashboard/keys/new', { name: 'ok', allowed_models: 'no-such-model, gpt-4o-mini' });
    expect(unknownModel.status).toBe(422);
    expect(await unknownModel.json()).toMatchObject({ detail: [{ loc: ['body', 'allowed_models', 0] }] });
    const form = await client.postForm('/dashboard/keys/new', { name: 'form', rate_limit_rpm: 'lots' });
    expect(form.status).toBe(422);
    expect(await form.text()).toContain('Please correct the form');
    expect(
      Number(((await portal.database.knex('api_keys').where({ owner_user_id: id }).count({ n: '*' }).first()) as { n: string }).n),
    ).toBe(0);

    for (const path of ['/dashboard/keys/abc', '/dashboard/keys/0', '/dashboard/keys/-3']) {
      const res = await client.get(path, { accept: 'application/json' });
      expect(res.status, path).toBe(422);
      expect(await res.json()).toMatchObject({ code: 'validation_error', detail: [{ loc: ['path', 'key_id'] }] });
    }
    for (const query of ['status=gone', 'limit=0', 'limit=1000', 'cursor=not-a-cursor', 'unknown=1']) {
      const res = await client.get(`/dashboard/keys?${query}`, { accept: 'application/json' });
      expect(res.status, query).toBe(422);
    }
    expect((await client.postJson('/dashboard/keys/999999', { action: 'explode' })).status).toBe(404);
  });

  it('a budget is kept to the nano-dollar, finer is refused (it was stored rounded: 1e-7 as 0); only decimal digits are numbers', async () => {
    const { client } = await signedIn();
    for (const [budget, kept] of [
      ['0.0000001', 1e-7],
      ['0.123456789', 0.123456789],
      [5e-7, 5e-7],
    ] as const) {
      const res = await client.postJson('/dashboard/keys/new', { name: `budget ${budget}`, budget_limit: budget });
      expect(res.status, String(budget)).toBe(201);
      const { key } = (await res.json()) as { key: { key_id: number } };
      const shown = (await (await client.get(`/dashboard/keys/${key.key_id}`, { accept: 'application/json' })).json()) as {
        budget_limit: number;
      };
      expect(shown.budget_limit, String(budget)).toBe(kept);
    }
    for (const [field, value] of [
      ['budget_limit', '0.0000000001'],
      ['budget_limit', 1e-10],
      ['budget_limit', '0x10'],
      ['budget_limit', '1e3'],
      ['rate_limit_rpm', '0x10'],
      ['rate_limit_rpm', '0b11'],
    ] as const) {
      const res = await client.postJson('/dashboard/keys/new', { name: 'refused', [field]: value });
      expect(res.status, `${field} ${value}`).toBe(422);
      expect(await res.json()).toMatchObject({ detail: [{ loc: ['body', field] }] });
    }
  });

  it('an invalid edit on the key page shows the page again with the edits kept and the problems named, and changes nothing', async () => {
    const { client } = await signedIn();
    const created = (await (await client.postJson('/dashboard/keys/new', { name: 'steady', rate_limit_rpm: '60' })).json()) as {
      key: { key_id: number };
    };
    const edit = await client.postForm(`/dashboard/keys/${created.key.key_id}`, {
      action: 'update',
      name: 'typed but invalid',
      budget_limit: '-5',
      rate_limit_rpm: 'abc',
    });
    expect(edit.status).toBe(422);
    const html = await edit.text();
    expect(html).toContain('Please correct the form');
    expect(html).toMatch(/budget limit: /);
    expect(html).toMatch(/rate limit rpm: /);
    expect(html).toContain('value="typed but invalid"');
    expect(html).toContain('value="abc"');
    expect(html).toContain('Save changes');
    const after = (await (await client.get(`/dashboard/keys/${created.key.key_id}`, { accept: 'application/json' })).json()) as {
      name: string;
      rate_limit_rpm: number;
    };
    expect(after).toMatchObject({ name: 'steady', rate_limit_rpm: 60 });
  });
});
