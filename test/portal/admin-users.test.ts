// User administration against a real gateway sharing the portal's database and store: every
// admin route of the permission table called as each role (a generated matrix: zero mismatches),
// scope by organisation and department, the role rules (never above one's own, the last owner
// kept), suspension ending sessions and stopping keys at the gateway, hard deletion as
// anonymisation that keeps the audit log, and invites from creation to acceptance or revocation.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { permissions, roleAtLeast, type Role } from '../../core/identity/index.js';
import { adminRoutes, type AdminRoute } from '../../portal/src/features/admin/route-table.js';
import type { PortalClient } from '../support/portal-client.js';
import type { PortalHarness } from '../support/portal-harness.js';
import type { GatewayHarness } from '../support/gateway-harness.js';
import { fundWallet, signUp, startPortalWithGateway, type SignedInUser } from '../support/portal-users.js';
import { waitFor } from '../support/wait-for.js';

let world: Awaited<ReturnType<typeof startPortalWithGateway>>;
let portal: PortalHarness;
let gateway: GatewayHarness;
let orgA: number;
let orgB: number;
let deptA: number;
let deptA2: number;
const actors = {} as Record<'owner' | 'platform_admin' | 'org_admin' | 'department_admin' | 'member' | 'other_org_admin', SignedInUser>;

const knex = () => portal.database.knex;

async function makeTarget(setup: { organisationId?: number; departmentId?: number; role?: string } = {}) {
  return signUp(portal, { organisationId: orgA, departmentId: deptA, ...setup });
}

async function createInvite(client: PortalClient, body: Record<string, unknown>, status = 201) {
  const res = await client.postJson('/dashboard/admin/users/invite', body);
  expect(res.status, await res.clone().text()).toBe(status);
  return (await res.json()) as { invite: { id: number; status: string; department_id: number | null; organisation_id: number } };
}

beforeAll(async () => {
  // The organisation-wide credit bound is lowered so that a few grants reach it.
  world = await startPortalWithGateway(undefined, { settings: { SVC_ORG_ADMIN_MAX_ORG_CREDIT_USD: '150' } });
  ({ portal, gateway } = world);
  const orgs = (await knex()('organisations')
    .insert([
      { name: 'Admin Org A', slug: `admin-a-${Date.now()}` },
      { name: 'Admin Org B', slug: `admin-b-${Date.now()}` },
    ])
    .returning('id')) as { id: number }[];
  orgA = orgs[0]!.id;
  orgB = orgs[1]!.id;
  const depts = (await knex()('departments')
    .insert([
      { organisation_id: orgA, name: 'Research' },
      { organisation_id: orgA, name: 'Sales' },
    ])
    .returning('id')) as { id: number }[];
  deptA = depts[0]!.id;
  deptA2 = depts[1]!.id;
  actors.owner = await signUp(portal, { role: 'owner' });
  actors.platform_admin = await signUp(portal, { role: 'platform_admin' });
  actors.org_admin = await signUp(portal, { organisationId: orgA, role: 'org_admin' });
  actors.department_admin = await signUp(portal, { organisationId: orgA, departmentId: deptA, role: 'department_admin' });
  actors.member = await signUp(portal, { organisationId: orgA, departmentId: deptA });
  actors.other_org_admin = await signUp(portal, { organisationId: orgB, role: 'org_admin' });
});
afterAll(async () => {
  await world?.close();
});

describe('the admin permission table', () => {
  it('every admin route answers each role as the table says (generated)', async () => {
    const roles: (Role | 'anonymous')[] = ['owner', 'platform_admin', 'org_admin', 'department_admin', 'member', 'anonymous'];
    const mismatches: string[] = [];
    for (const route of adminRoutes) {
      for (const role of roles) {
        // Each call acts on a fresh target in the caller's reach (organisation A, department A), so
        // an allowed destructive call (hard delete, revoke) cannot spoil the next one.
        const path = await concretePath(route);
        const client = role === 'anonymous' ? undefined : actors[role].client;
        const status = await call(client, route, path);
        const expected =
          role === 'anonymous' ? 'refused 401' : roleAtLeast(role, permissions[route.action].minimum) ? 'allowed' : 'refused 403';
        const got = status === 401 ? 'refused 401' : status === 403 ? 'refused 403' : 'allowed';
        if (got !== expected) mismatches.push(`${route.method} ${route.path} as ${role}: expected ${expected}, got ${status}`);
        if (status >= 500) mismatches.push(`${route.method} ${route.path} as ${role}: ${status}`);
      }
    }
    expect(mismatches).toEqual([]);
  });

  async function concretePath(route: AdminRoute): Promise<string> {
    let path = route.path;
    if (path.includes(':user_id')) path = path.replace(':user_id', String((await makeTarget()).id));
    if (path.includes(':org_id')) {
      const [org] = (await knex()('organisations')
        .insert({ name: 'Matrix', slug: `matrix-${Math.random().toString(36).slice(2)}` })
        .returning('id')) as {
        id: number;
      }[];
      path = path.replace(':org_id', String(org!.id));
    }
    if (path.includes(':grant_id')) {
      const [grant] = (await knex()('promotion_grants')
        .insert({ user_id: actors.member.id, payer_id: `user:${actors.member.id}`, amount_nano: 1, reason: 'matrix' })
        .returning('id')) as { id: number }[];
      path = path.replace(':grant_id', String(grant!.id));
    }
    if (path.includes(':invite_id')) {
      const { invite } = await createInvite(actors.org_admin.client, {
        email: `matrix-${Math.random()}@example.com`,
        department_id: deptA,
      });
      path = path.replace(':invite_id', String(invite.id));
    }
    if (path.includes(':department_id')) {
      const [department] = (await knex()('departments')
        .insert({ organisation_id: orgA, name: `matrix-${Math.random().toString(36).slice(2)}` })
        .returning('id')) as { id: number }[];
      path = path.replace(':department_id', String(department!.id));
    }
    path = path.replace(':conv_id', 'matrix-conversation').replace(':provider_id', '999999');
    // A parameter this builder does not know would be refused as malformed before the guard runs.
    if (path.includes(':')) throw new Error(`the matrix has no value for a parameter of ${path}`);
    return path;
  }

  /** The call with a body that passes no validation, so an allowed call changes nothing (422). */
  async function call(client: PortalClient | undefined, route: AdminRoute, path: string): Promise<number> {
    const headers = { accept: 'application/json' };
    if (!client) {
      const res = await fetch(`${portal.url}${path}`, {
        method: route.method,
        headers: { ...headers, 'content-type': 'application/json', origin: portal.url },
        ...(route.method !== 'GET' && { body: '{}' }),
      });
      return res.status;
    }
    const res = route.method === 'GET' ? await client.get(path, headers) : await client.request(route.method, path, { json: {}, headers });
    return res.status;
  }
});

describe('scope', () => {
  it('lists hold only the caller’s reach, and a user out of reach is 404 on every route', async () => {
    const target = await makeTarget();
    const elsewhere = await makeTarget({ departmentId: deptA2 });
    const list = async (client: PortalClient, query = '') => {
      const res = await client.get(`/dashboard/admin/users?limit=100${query}`, { accept: 'application/json' });
      expect(res.status).toBe(200);
      return ((await res.json()) as { data: { id: number; organisation_id: number | null; department_id: number | null }[] }).data;
    };
    const byOrgAdmin = await list(actors.org_admin.client);
    expect(byOrgAdmin.every((u) => u.organisation_id === orgA)).toBe(true);
    expect(byOrgAdmin.map((u) => u.id)).toEqual(expect.arrayContaining([target.id, elsewhere.id]));
    const byDepartmentAdmin = await list(actors.department_admin.client);
    expect(byDepartmentAdmin.every((u) => u.department_id === deptA)).toBe(true);
    expect(byDepartmentAdmin.map((u) => u.id)).toContain(target.id);
    expect(byDepartmentAdmin.map((u) => u.id)).not.toContain(elsewhere.id);
    expect((await list(actors.other_org_admin.client)).some((u) => u.organisation_id === orgA)).toBe(false);
    const byPlatform = await list(actors.platform_admin.client);
    expect(byPlatform.map((u) => u.id)).toEqual(expect.arrayContaining([target.id, actors.other_org_admin.id]));
    // Search and filters narrow, paging walks without repeats.
    expect((await list(actors.org_admin.client, `&q=${encodeURIComponent(target.email.toUpperCase())}`)).map((u) => u.id)).toEqual([
      target.id,
    ]);
    const first = (await (
      await actors.platform_admin.client.get('/dashboard/admin/users?limit=2', { accept: 'application/json' })
    ).json()) as {
      data: { id: number }[];
      next_before: number;
    };
    const second = (await (
      await actors.platform_admin.client.get(`/dashboard/admin/users?limit=2&before=${first.next_before}`, { accept: 'application/json' })
    ).json()) as { data: { id: number }[] };
    expect(second.data[0]!.id).toBeLessThan(first.data[1]!.id);

    for (const [client, user] of [
      [actors.other_org_admin.client, target],
      [actors.department_admin.client, elsewhere],
    ] as const) {
      expect((await client.get(`/dashboard/admin/users/${user.id}`, { accept: 'application/json' })).status).toBe(404);
      expect((await client.postJson(`/dashboard/admin/users/${user.id}/status`, { status: 'suspended' })).status).toBe(404);
    }
    for (const query of ['limit=0', 'limit=101', 'role=king', 'status=gone', 'before=x', 'other=1']) {
      expect((await actors.org_admin.client.get(`/dashboard/admin/users?${query}`, { accept: 'application/json' })).status, query).toBe(
        422,
      );
    }
  });
});

describe('higher roles', () => {
  it('lists leave out users of a higher role, and routes naming one in their body answer 404 as for nobody', async () => {
    const higher = await signUp(portal, { organisationId: orgA, role: 'platform_admin' });
    const peer = await makeTarget({ role: 'org_admin' });
    const ids = async (client: PortalClient) =>
      (
        (await (await client.get('/dashboard/admin/users?limit=100', { accept: 'application/json' })).json()) as {
          data: { id: number }[];
        }
      ).data.map((u) => u.id);
    const byOrgAdmin = await ids(actors.org_admin.client);
    expect(byOrgAdmin).toContain(peer.id);
    expect(byOrgAdmin).not.toContain(higher.id);
    const page = await (await actors.org_admin.client.get('/dashboard/admin/users?limit=100', { accept: 'text/html' })).text();
    expect(page).toContain(peer.email);
    expect(page).not.toContain(higher.email);
    const byPlatformAdmin = await ids(actors.platform_admin.client);
    expect(byPlatformAdmin).toContain(higher.id);
    expect(byPlatformAdmin).not.toContain(actors.owner.id);
    expect(await ids(actors.owner.client)).toContain(actors.owner.id);

    // Promotional credit to a higher role: 404, exactly as to a user (or an email) that does not exist.
    const grant = (body: Record<string, unknown>) =>
      actors.platform_admin.client.postJson('/dashboard/admin/promotions/create', { amount_usd: '5', reason: 'reach', ...body });
    const text = async (res: Response) => {
      expect(res.status).toBe(404);
      return (await res.text()).replace(/"request_id":"[^"]*"/g, '');
    };
    expect(await text(await grant({ user_id: actors.owner.id }))).toBe(await text(await grant({ user_id: 2_000_000_000 })));
    expect(await text(await grant({ email: actors.owner.email }))).toBe(await text(await grant({ email: 'nobody-here@example.com' })));
    expect(Number(((await knex()('promotion_grants').where({ user_id: actors.owner.id }).count({ n: '*' }))[0] as { n: string }).n)).toBe(
      0,
    );
  });
});

describe('roles', () => {
  it("stepping down from one's own role takes a confirmation", async () => {
    // (The page offers no role form for one's own account; this is the API's guard.)
    const admin = await signUp(portal, { organisationId: orgA, role: 'org_admin' });
    const unconfirmed = await admin.client.postJson(`/dashboard/admin/users/${admin.id}/role`, { role: 'member' });
    expect(unconfirmed.status).toBe(422);
    expect(((await unconfirmed.json()) as { error: { param: string } }).error.param).toBe('confirm_step_down');
    expect(((await knex()('users').where({ id: admin.id }).first('role')) as { role: string }).role).toBe('org_admin');
    const confirmed = await admin.client.postJson(`/dashboard/admin/users/${admin.id}/role`, { role: 'member', confirm_step_down: 'yes' });
    expect(confirmed.status).toBe(200);
    expect(((await knex()('users').where({ id: admin.id }).first('role')) as { role: string }).role).toBe('member');
  });

  it('nobody raises anyone above their own role or acts on a higher one; the last owner stays', async () => {
    const target = await makeTarget();
    const role = (client: PortalClient, id: number, value: string) => client.postJson(`/dashboard/admin/users/${id}/role`, { role: value });
    expect((await role(actors.department_admin.client, target.id, 'org_admin')).status).toBe(403);
    expect((await role(actors.department_admin.client, target.id, 'department_admin')).status).toBe(200);
    // An org admin cannot reach a platform admin, nor give the platform role.
    expect((await role(actors.org_admin.client, actors.platform_admin.id, 'member')).status).toBe(404);
    expect((await role(actors.org_admin.client, target.id, 'platform_admin')).status).toBe(403);
    const changed = await role(actors.org_admin.client, target.id, 'org_admin');
    expect(changed.status).toBe(200);
    expect(((await changed.json()) as { user: { role: string } }).user.role).toBe('org_admin');
    expect((await role(actors.org_admin.client, target.id, 'boss')).status).toBe(422);

    // The last active owner can be neither demoted, suspended nor deleted.
    await knex()('users').where({ role: 'owner' }).whereNot({ id: actors.owner.id }).update({ role: 'platform_admin' });
    const second = await signUp(portal, { role: 'owner' });
    await knex()('users').where({ id: second.id }).update({ role: 'platform_admin' });
    expect((await role(second.client, actors.owner.id, 'member')).status).toBe(404); // a platform admin cannot reach an owner
    await knex()('users').where({ id: second.id }).update({ role: 'owner' });
    expect(
      (await second.client.postJson(`/dashboard/admin/users/${second.id}/role`, { role: 'member', confirm_step_down: 'yes' })).status,
    ).toBe(200); // the other owner may step down, on purpose
    // Their own step, in their activity: not "by an administrator".
    const [stepped] = (
      (await (await second.client.get('/dashboard/activity', { accept: 'application/json' })).json()) as {
        data: { kind: string; summary: string; by_administrator: boolean }[];
      }
    ).data.filter((a) => a.kind === 'account_administered');
    expect(stepped).toMatchObject({ summary: 'Role changed from owner to member', by_administrator: false });
    const demoteLast = await role(actors.owner.client, actors.owner.id, 'platform_admin');
    expect(demoteLast.status).toBe(409);
    expect(await demoteLast.text()).toContain('last active owner');
  });
});

describe('status and deletion', () => {
  it('suspending signs the user out and stops their keys at the gateway; reactivating brings the keys back', async () => {
    const user = await makeTarget();
    await fundWallet(gateway, `user:${user.id}`, 5);
    const { secret } = (await (await user.client.postJson('/dashboard/keys/new', { name: 'suspend me' })).json()) as { secret: string };
    const sdk = new OpenAI({ baseURL: `${gateway.gateway.url}/v1`, apiKey: secret, maxRetries: 0 });
    const chat = () =>
      sdk.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 }).then(
        () => 200,
        (e: unknown) => (e instanceof OpenAI.APIError ? `${e.status} ${String(e.code)}` : 'error'),
      );
    expect(await chat()).toBe(200);
    const res = await actors.org_admin.client.postJson(`/dashboard/admin/users/${user.id}/status`, { status: 'suspended' });
    expect(res.status).toBe(200);
    await waitFor('the key to be refused', async () => (await chat()) === '403 account_status', 5_000, 25);
    expect((await user.client.get('/dashboard/api/usage', { accept: 'application/json' })).status).toBe(401);
    // Nobody changes their own status, nor deletes themselves: forbidden, as setting one's own credit is.
    expect(
      (await actors.org_admin.client.postJson(`/dashboard/admin/users/${actors.org_admin.id}/status`, { status: 'archived' })).status,
    ).toBe(403);
    expect(
      (await actors.org_admin.client.postJson(`/dashboard/admin/users/${actors.org_admin.id}/hard-delete`, { confirm: 'delete' })).status,
    ).toBe(403);
    await actors.org_admin.client.postJson(`/dashboard/admin/users/${user.id}/status`, { status: 'active' });
    await waitFor('the key to work again', async () => (await chat()) === 200, 5_000, 25);
  });

  it('hard deletion removes personal data, revokes keys and keeps the audit rows', async () => {
    const user = await makeTarget();
    await fundWallet(gateway, `user:${user.id}`, 5);
    const created = (await (await user.client.postJson('/dashboard/keys/new', { name: 'delete me' })).json()) as {
      secret: string;
      key: { gateway_key_id: string };
    };
    const sdk = new OpenAI({ baseURL: `${gateway.gateway.url}/v1`, apiKey: created.secret, maxRetries: 0 });
    await sdk.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 });
    await waitFor('the audit row', async () => Boolean(await knex()('audit_log').where({ key_id: created.key.gateway_key_id }).first()));

    expect(
      (await actors.department_admin.client.postJson(`/dashboard/admin/users/${user.id}/hard-delete`, { confirm: 'delete' })).status,
    ).toBe(403);
    expect((await actors.org_admin.client.postJson(`/dashboard/admin/users/${user.id}/hard-delete`, {})).status).toBe(422);
    const res = await actors.org_admin.client.postJson(`/dashboard/admin/users/${user.id}/hard-delete`, { confirm: 'delete' });
    expect(res.status).toBe(200);
    const row = (await knex()('users').where({ id: user.id }).first()) as Record<string, unknown>;
    expect(row).toMatchObject({
      email: `deleted-${user.id}@invalid`,
      display_name: 'Deleted user',
      password_hash: null,
      status: 'archived',
    });
    expect(row.deleted_at).not.toBeNull();
    await waitFor('the key to be refused', async () =>
      sdk.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 }).then(
        () => false,
        (e: unknown) => e instanceof OpenAI.APIError && e.status === 401,
      ),
    );
    expect(await knex()('audit_log').where({ key_id: created.key.gateway_key_id }).first()).toBeDefined();
    // The address is free again, and the deleted account is out of the lists.
    const again = await signUp(portal, { email: user.email });
    expect(again.id).not.toBe(user.id);
    const list = (await (await actors.org_admin.client.get('/dashboard/admin/users?limit=100', { accept: 'application/json' })).json()) as {
      data: { id: number }[];
    };
    expect(list.data.some((u) => u.id === user.id)).toBe(false);
    expect((await actors.org_admin.client.postJson(`/dashboard/admin/users/${user.id}/status`, { status: 'active' })).status).toBe(409);
    // Nothing else about the tombstone changes either.
    for (const [path, body] of [
      ['role', { role: 'org_admin' }],
      ['credit-limit', { credit_limit_usd: 1000 }],
      ['department', { department_id: deptA2 }],
      ['hard-delete', { confirm: 'delete' }],
    ] as const)
      expect((await actors.platform_admin.client.postJson(`/dashboard/admin/users/${user.id}/${path}`, body)).status, path).toBe(409);
    expect(await knex()('users').where({ id: user.id }).first('role', 'credit_limit_usd')).toMatchObject({
      role: 'member',
      credit_limit_usd: null,
    });
  });

  it('departments stay within the organisation; platform admins move users between organisations with their keys', async () => {
    const user = await makeTarget();
    expect((await actors.org_admin.client.postJson(`/dashboard/admin/users/${user.id}/department`, { department_id: deptA2 })).status).toBe(
      200,
    );
    const foreign = (await knex()('departments').insert({ organisation_id: orgB, name: 'Foreign' }).returning('id')) as { id: number }[];
    const refused = await actors.org_admin.client.postJson(`/dashboard/admin/users/${user.id}/department`, {
      department_id: foreign[0]!.id,
    });
    expect(refused.status).toBe(422);
    const { key } = (await (await user.client.postJson('/dashboard/keys/new', { name: 'moving key' })).json()) as {
      key: { gateway_key_id: string };
    };
    expect((await actors.org_admin.client.postJson(`/dashboard/admin/users/${user.id}/org`, { org_id: orgB })).status).toBe(403);
    const moved = await actors.platform_admin.client.postJson(`/dashboard/admin/users/${user.id}/org`, { org_id: orgB });
    expect(moved.status).toBe(200);
    expect(((await moved.json()) as { user: { organisation_id: number; department_id: number | null } }).user).toMatchObject({
      organisation_id: orgB,
      department_id: null,
    });
    expect(((await knex()('api_keys').where({ id: key.gateway_key_id }).first()) as { organisation_id: number }).organisation_id).toBe(
      orgB,
    );
    expect((await actors.platform_admin.client.postJson(`/dashboard/admin/users/${user.id}/org`, { org_id: 999999 })).status).toBe(404);
  });
});

describe('user billing', () => {
  it('a credit limit lets the wallet go below zero at the gateway; an exemption charges no wallet', async () => {
    const user = await makeTarget();
    const { secret, key } = (await (await user.client.postJson('/dashboard/keys/new', { name: 'credit key' })).json()) as {
      secret: string;
      key: { gateway_key_id: string };
    };
    const sdk = new OpenAI({ baseURL: `${gateway.gateway.url}/v1`, apiKey: secret, maxRetries: 0 });
    const chat = () =>
      sdk.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'on credit' }], max_tokens: 5 }).then(
        () => 'ok',
        (e: unknown) => (e instanceof OpenAI.APIError ? String(e.code) : 'error'),
      );
    expect(await chat()).toBe('billing_limit_reached');
    expect(
      (await actors.department_admin.client.postJson(`/dashboard/admin/users/${user.id}/credit-limit`, { credit_limit_usd: 1 })).status,
    ).toBe(403);
    // Org admins and above set it for users within their reach (the route table of the portal's spec).
    const byOrgAdmin = await actors.org_admin.client.postJson(`/dashboard/admin/users/${user.id}/credit-limit`, { credit_limit_usd: 1 });
    expect(byOrgAdmin.status, await byOrgAdmin.clone().text()).toBe(200);
    // Bounded for org admins: SVC_ORG_ADMIN_MAX_CREDIT_USD (100) per user, and never the wallet
    // that pays for their own keys (the organisation's billing user).
    const overCeiling = await actors.org_admin.client.postJson(`/dashboard/admin/users/${user.id}/credit-limit`, { credit_limit_usd: 101 });
    expect(overCeiling.status).toBe(403);
    expect(await overCeiling.text()).toContain('at most 100 USD');
    await knex()('organisations').where({ id: orgA }).update({ billing_user_id: user.id });
    try {
      const ownPayer = await actors.org_admin.client.postJson(`/dashboard/admin/users/${user.id}/credit-limit`, { credit_limit_usd: 5 });
      expect(ownPayer.status).toBe(403);
      expect(await ownPayer.text()).toContain('pays for your own keys');
    } finally {
      await knex()('organisations').where({ id: orgA }).update({ billing_user_id: null });
    }
    await actors.platform_admin.client.postJson(`/dashboard/admin/users/${user.id}/credit-limit`, { credit_limit_usd: '' });
    expect(
      (await actors.platform_admin.client.postJson(`/dashboard/admin/users/${user.id}/credit-limit`, { credit_limit_usd: 'lots' })).status,
    ).toBe(422);
    // Nobody extends their own money limits: an administrator granting themselves credit would spend unpaid.
    for (const [actor, path, body] of [
      ['platform_admin', 'credit-limit', { credit_limit_usd: 1000 }],
      ['org_admin', 'credit-limit', { credit_limit_usd: 1000 }],
      ['platform_admin', 'billing-exempt', { billing_exempt: true }],
      ['platform_admin', 'billing-config', { spending_limit_usd: 1000 }],
      ['platform_admin', 'monthly-budget', { monthly_budget_usd: 1000 }],
    ] as const) {
      const self = await actors[actor].client.postJson(`/dashboard/admin/users/${actors[actor].id}/${path}`, body);
      expect(self.status, `${actor} ${path}`).toBe(403);
      expect(((await self.json()) as { human_message?: string; message?: string }).human_message ?? '').toMatch(/your own/);
    }
    const orgAdminRow = (await knex()('users').where({ id: actors.org_admin.id }).first('credit_limit_usd')) as {
      credit_limit_usd: unknown;
    };
    expect(orgAdminRow.credit_limit_usd).toBeNull();
    const set = await actors.platform_admin.client.postJson(`/dashboard/admin/users/${user.id}/credit-limit`, { credit_limit_usd: '1' });
    expect(set.status, await set.clone().text()).toBe(200);
    expect(((await set.json()) as { user: { credit_limit_usd: number } }).user.credit_limit_usd).toBe(1);
    await waitFor('the gateway to serve on credit', async () => (await chat()) === 'ok', 5_000, 25);
    await waitFor('the debit in the ledger', async () => {
      const [row] = await knex()('wallet_entries')
        .where({ payer_id: `user:${user.id}` })
        .sum({ n: knex().raw('coalesce(amount_nano, amount_micro * 1000)') });
      return Number((row as { n: string | null }).n ?? 0) < 0;
    });
    await actors.platform_admin.client.postJson(`/dashboard/admin/users/${user.id}/credit-limit`, { credit_limit_usd: '' });
    await waitFor('the gateway to refuse again', async () => (await chat()) === 'billing_limit_reached', 5_000, 25);

    expect(
      (await actors.org_admin.client.postJson(`/dashboard/admin/users/${user.id}/billing-exempt`, { billing_exempt: true })).status,
    ).toBe(403);
    const exempt = await actors.platform_admin.client.postJson(`/dashboard/admin/users/${user.id}/billing-exempt`, {
      billing_exempt: true,
    });
    expect(((await exempt.json()) as { user: { billing_exempt: boolean } }).user.billing_exempt).toBe(true);
    expect(
      ((await knex()('api_keys').where({ id: key.gateway_key_id }).first('payer_id')) as { payer_id: string | null }).payer_id,
    ).toBeNull();
    await waitFor('the exempt key to be served without a wallet', async () => (await chat()) === 'ok', 5_000, 25);
    // Without a body the route toggles back.
    await actors.platform_admin.client.postJson(`/dashboard/admin/users/${user.id}/billing-exempt`, {});
    expect(((await knex()('api_keys').where({ id: key.gateway_key_id }).first('payer_id')) as { payer_id: string | null }).payer_id).toBe(
      `user:${user.id}`,
    );
    await waitFor('the wallet to pay again', async () => (await chat()) === 'billing_limit_reached', 5_000, 25);
  });
  it("an org admin's credit is bounded for the organisation as a whole, concurrent grants included", async () => {
    const [org] = (await knex()('organisations')
      .insert({ name: 'Credit Org', slug: `credit-${Date.now()}` })
      .returning('id')) as { id: number }[];
    const orgC = org!.id;
    const admin = await signUp(portal, { organisationId: orgC, role: 'org_admin' });
    const [u1, u2, u3, u4] = await Promise.all([1, 2, 3, 4].map(() => signUp(portal, { organisationId: orgC })));
    const grant = (user: SignedInUser, usd: number) =>
      admin.client.postJson(`/dashboard/admin/users/${user.id}/credit-limit`, { credit_limit_usd: usd });
    expect((await grant(u1!, 100)).status).toBe(200);
    // 100 + 60 is past the organisation's 150: refused, saying how much is left.
    const over = await grant(u2!, 60);
    expect(over.status).toBe(403);
    expect(((await over.json()) as { human_message: string }).human_message).toContain('at most $50 for this user');
    expect((await grant(u2!, 50)).status).toBe(200);
    // Lowering is always allowed, and frees room for others.
    expect((await grant(u1!, 0)).status).toBe(200);
    // Two grants at once, each within the room alone but not together: one passes.
    const statuses = (await Promise.all([grant(u3!, 80), grant(u4!, 80)])).map((r) => r.status).sort();
    expect(statuses).toEqual([200, 403]);
    const total = (await knex()('users').where({ organisation_id: orgC }).sum({ usd: 'credit_limit_usd' }).first()) as { usd: string };
    expect(Number(total.usd)).toBe(130);
    // A platform administrator is not bounded by it.
    expect(
      (await actors.platform_admin.client.postJson(`/dashboard/admin/users/${u1!.id}/credit-limit`, { credit_limit_usd: 500 })).status,
    ).toBe(200);
  });

  it("a user's monthly budget caps their keys together at the gateway, concurrent requests included", async () => {
    const user = await makeTarget();
    await fundWallet(gateway, `user:${user.id}`, 50);
    const secrets: string[] = [];
    for (const name of ['budget one', 'budget two'])
      secrets.push(((await (await user.client.postJson('/dashboard/keys/new', { name })).json()) as { secret: string }).secret);
    const attempt = (secret: string) =>
      new OpenAI({ baseURL: `${gateway.gateway.url}/v1`, apiKey: secret, maxRetries: 0 }).chat.completions
        .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'count me against my budget' }], max_tokens: 8 })
        .then(
          () => ({ served: true as const }),
          (e: unknown) => {
            if (!(e instanceof OpenAI.APIError)) throw e;
            return { served: false as const, status: e.status, error: e.error as { code: string; details?: Record<string, unknown> } };
          },
        );
    const setBudget = (client: PortalClient, monthly_budget_usd: unknown) =>
      client.postJson(`/dashboard/admin/users/${user.id}/monthly-budget`, { monthly_budget_usd });
    expect((await setBudget(actors.org_admin.client, 1)).status).toBe(403);
    for (const bad of [-1, 'lots', '1.1234567'])
      expect((await setBudget(actors.platform_admin.client, bad)).status, JSON.stringify(bad)).toBe(422);

    // Below one request's worst case: refused on either key, naming the user's budget.
    const tiny = await setBudget(actors.platform_admin.client, '0.000001');
    expect(tiny.status, await tiny.clone().text()).toBe(200);
    expect(((await tiny.json()) as { user: { monthly_budget_usd: number } }).user.monthly_budget_usd).toBe(0.000001);
    for (const secret of secrets) {
      const refused = await attempt(secret);
      if (refused.served) throw new Error('served past the monthly budget');
      expect(refused).toMatchObject({ status: 402, error: { code: 'budget_exceeded' } });
      expect(refused.error.details).toMatchObject({ scope: 'user', user_id: user.id, budget_limit: 0.000001 });
    }
    const refusal = await attempt(secrets[0]!);
    const reserve = refusal.served ? 0 : Number(refusal.error.details!.reserve_usd);
    expect(reserve).toBeGreaterThan(0);

    // Removed: served from the next request (the cap is in the store every gateway reads).
    await setBudget(actors.platform_admin.client, '');
    await waitFor('the gateway to serve without a budget', async () => (await attempt(secrets[1]!)).served, 2_000, 25);

    // Room for about two and a half worst cases: 16 concurrent requests over both keys.
    const spent = async () =>
      Number(
        (
          (await knex()('audit_log')
            .whereIn('key_id', knex()('api_keys').select('id').where({ owner_user_id: user.id }))
            .sum({ usd: 'cost_usd' })
            .first()) as { usd: string | null }
        ).usd ?? 0,
      );
    await waitFor('the served request in the audit log', async () => (await spent()) > 0);
    const cap = Math.ceil(((await spent()) + 2.5 * reserve) * 1e6) / 1e6;
    expect((await setBudget(actors.platform_admin.client, cap)).status).toBe(200);
    const outcomes = await Promise.all(Array.from({ length: 16 }, (_, i) => attempt(secrets[i % 2]!)));
    const served = outcomes.filter((o) => o.served).length;
    expect(served).toBeGreaterThanOrEqual(2);
    expect(served).toBeLessThan(16);
    for (const o of outcomes) if (!o.served) expect(o.error.code).toBe('budget_exceeded');
    await waitFor('every served request in the audit log', async () => {
      const [row] = await knex()('audit_log')
        .whereIn('key_id', knex()('api_keys').select('id').where({ owner_user_id: user.id }))
        .andWhere({ status: 200 })
        .count({ n: '*' });
      return Number(row!.n) === served + 1;
    });
    expect(await spent()).toBeLessThanOrEqual(cap);
    // The live state an administrator reads for the key shows the user's group next to the organisation's.
    const number = ((await knex()('api_keys').where({ owner_user_id: user.id }).orderBy('number').first('number')) as { number: number })
      .number;
    const state = (await (
      await actors.platform_admin.client.get(`/dashboard/admin/api/key-rate-limit-state?key_id=${number}`, { accept: 'application/json' })
    ).json()) as { owner: { user_id: number; monthly_budget_usd: number; counted_this_month_usd: number } };
    expect(state.owner).toMatchObject({ user_id: user.id, monthly_budget_usd: cap });
    expect(state.owner.counted_this_month_usd).toBeLessThanOrEqual(cap);
  });

  it('billing-config sets the authorised limit as credit for a self-paying user and as a monthly budget otherwise', async () => {
    const config = (client: PortalClient, userId: number, spending_limit_usd: unknown) =>
      client.postJson(`/dashboard/admin/users/${userId}/billing-config`, { spending_limit_usd });
    type Answer = { user: { credit_limit_usd: number | null; monthly_budget_usd: number | null }; billing: Record<string, unknown> };

    const selfPaying = await makeTarget();
    expect((await config(actors.org_admin.client, selfPaying.id, 5)).status).toBe(403);
    expect((await config(actors.platform_admin.client, selfPaying.id, 'plenty')).status).toBe(422);
    const own = await config(actors.platform_admin.client, selfPaying.id, '5');
    expect(own.status, await own.clone().text()).toBe(200);
    const ownAnswer = (await own.json()) as Answer;
    expect(ownAnswer.billing).toMatchObject({ mode: 'own_wallet', applied_as: 'credit_limit', spending_limit_usd: 5 });
    expect(ownAnswer.user).toMatchObject({ credit_limit_usd: 5, monthly_budget_usd: null });
    // The gateway serves the unfunded wallet on that credit.
    const { secret } = (await (await selfPaying.client.postJson('/dashboard/keys/new', { name: 'config key' })).json()) as {
      secret: string;
    };
    const sdk = new OpenAI({ baseURL: `${gateway.gateway.url}/v1`, apiKey: secret, maxRetries: 0 });
    await waitFor('the gateway to serve on the authorised credit', () =>
      sdk.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 }).then(
        () => true,
        () => false,
      ),
    );

    // Paid by the organisation's billing user: the limit caps what they spend of that wallet.
    const [org] = (await knex()('organisations')
      .insert({ name: 'Config Org', slug: `config-${Date.now()}` })
      .returning('id')) as { id: number }[];
    const payer = await signUp(portal, { organisationId: org!.id, role: 'org_admin' });
    await knex()('organisations').where({ id: org!.id }).update({ billing_user_id: payer.id });
    const paidFor = await signUp(portal, { organisationId: org!.id });
    const other = (await (await config(actors.platform_admin.client, paidFor.id, 7)).json()) as Answer;
    expect(other.billing).toMatchObject({ mode: 'paid_by_other', payer_id: `user:${payer.id}`, applied_as: 'monthly_budget' });
    expect(other.user).toMatchObject({ credit_limit_usd: null, monthly_budget_usd: 7 });

    // Exempt: no wallet bounds them, so the limit is their monthly budget; empty removes it.
    await actors.platform_admin.client.postJson(`/dashboard/admin/users/${selfPaying.id}/billing-exempt`, { billing_exempt: true });
    const exempt = (await (await config(actors.platform_admin.client, selfPaying.id, 3)).json()) as Answer;
    expect(exempt.billing).toMatchObject({ mode: 'exempt', applied_as: 'monthly_budget', spending_limit_usd: 3 });
    const cleared = (await (await config(actors.platform_admin.client, selfPaying.id, '')).json()) as Answer;
    expect(cleared.user.monthly_budget_usd).toBeNull();
    const page = await (await actors.platform_admin.client.get(`/dashboard/admin/users/${selfPaying.id}`)).text();
    expect(page).toContain('data-testid="billing-mode"');
    expect(page).toContain('Exempt from billing');
  });
});

describe('invites', () => {
  it('an invite is emailed, accepted once by its addressee, and joins them with the role and department', async () => {
    const email = `invitee-${Date.now()}@example.com`;
    const { invite } = await createInvite(actors.org_admin.client, { email, role: 'department_admin', department_id: deptA2 });
    expect(invite).toMatchObject({ status: 'pending', organisation_id: orgA, department_id: deptA2 });
    const link = new URL(await portal.emailedLink(email, '/invite/'));
    // Someone else signed in cannot accept it.
    const stranger = await signUp(portal);
    const strangerPage = await (await stranger.client.get(link.pathname)).text();
    expect(strangerPage).not.toContain('data-testid="invite-accept"');
    expect((await stranger.client.postJson(`${link.pathname}/accept`, {})).status).toBe(403);

    const invitee = await signUp(portal, { email });
    expect(await (await invitee.client.get(link.pathname)).text()).toContain('data-testid="invite-accept"');
    const accepted = await invitee.client.postJson(`${link.pathname}/accept`, {});
    expect(accepted.status, await accepted.clone().text()).toBe(200);
    expect(await accepted.json()).toMatchObject({ ok: true, organisation_id: orgA, role: 'department_admin' });
    const row = (await knex()('users').where({ id: invitee.id }).first()) as {
      organisation_id: number;
      department_id: number;
      role: string;
    };
    expect(row).toMatchObject({ organisation_id: orgA, department_id: deptA2, role: 'department_admin' });
    expect((await invitee.client.postJson(`${link.pathname}/accept`, {})).status).toBe(409);
    expect(await (await fetch(`${portal.url}${link.pathname}`)).text()).toContain('already been accepted');
    // Inviting an existing member again is a conflict.
    await createInvite(actors.org_admin.client, { email }, 409);
  });

  it('a pending invite is revoked once and its link stops working; invites obey the inviter’s reach', async () => {
    const email = `revoked-${Date.now()}@example.com`;
    // A department admin's invite goes into their own department, whatever they ask.
    const { invite } = await createInvite(actors.department_admin.client, { email, department_id: deptA2 });
    expect(invite.department_id).toBe(deptA);
    await createInvite(actors.department_admin.client, { email: `x${email}`, role: 'org_admin' }, 403);
    await createInvite(actors.org_admin.client, { email: `y${email}`, org_id: orgB }, 403);
    await createInvite(actors.org_admin.client, { email: 'not an email' }, 422);
    expect((await actors.other_org_admin.client.postJson(`/dashboard/admin/users/invite/${invite.id}/revoke`, {})).status).toBe(404);
    const revoked = await actors.department_admin.client.postJson(`/dashboard/admin/users/invite/${invite.id}/revoke`, {});
    expect(revoked.status).toBe(200);
    expect(((await revoked.json()) as { invite: { status: string } }).invite.status).toBe('revoked');
    expect((await actors.department_admin.client.postJson(`/dashboard/admin/users/invite/${invite.id}/revoke`, {})).status).toBe(409);
    const link = new URL(await portal.emailedLink(email, '/invite/'));
    expect(await (await fetch(`${portal.url}${link.pathname}`)).text()).toContain('withdrawn');
    const invitee = await signUp(portal, { email });
    expect((await invitee.client.postJson(`${link.pathname}/accept`, {})).status).toBe(409);
    const listed = (await (await actors.org_admin.client.get('/dashboard/admin/users/invite', { accept: 'application/json' })).json()) as {
      data: { id: number; status: string }[];
    };
    expect(listed.data.find((i) => i.id === invite.id)?.status).toBe('revoked');
    const others = (await (
      await actors.other_org_admin.client.get('/dashboard/admin/users/invite', { accept: 'application/json' })
    ).json()) as {
      data: { id: number }[];
    };
    expect(others.data.some((i) => i.id === invite.id)).toBe(false);
  });

  // Found by an outside probe: two pending invitations of one address to one organisation, with
  // different roles, could each be accepted in turn.
  it('inviting an address again replaces its pending invitation: the earlier link is withdrawn', async () => {
    const email = `twice-${Date.now()}@example.com`;
    const first = await createInvite(actors.org_admin.client, { email, role: 'member' });
    const firstLink = new URL(await portal.emailedLink(email, '/invite/'));
    const second = await createInvite(actors.org_admin.client, {
      email: email.toUpperCase(),
      role: 'department_admin',
      department_id: deptA2,
    });
    const listed = (await (await actors.org_admin.client.get('/dashboard/admin/users/invite', { accept: 'application/json' })).json()) as {
      data: { id: number; status: string }[];
    };
    expect(listed.data.find((i) => i.id === first.invite.id)?.status).toBe('revoked');
    expect(listed.data.find((i) => i.id === second.invite.id)?.status).toBe('pending');
    expect(await (await fetch(`${portal.url}${firstLink.pathname}`)).text()).toContain('withdrawn');
  });
});

describe('departments', () => {
  type Department = { id: number; organisation_id: number; name: string; members: number };
  const created = async (client: PortalClient, body: Record<string, unknown>) => {
    const res = await client.postJson('/dashboard/admin/departments', body);
    expect(res.status, await res.clone().text()).toBe(201);
    return ((await res.json()) as { department: Department }).department;
  };
  const listed = async (client: PortalClient) =>
    ((await (await client.get('/dashboard/admin/departments', { accept: 'application/json' })).json()) as { data: Department[] }).data;

  it('org admins create, rename and delete their organisation’s departments; people, invites and tokens are placed in them', async () => {
    const team = await created(actors.org_admin.client, { name: 'Platform' });
    expect(team).toMatchObject({ organisation_id: orgA, name: 'Platform', members: 0 });
    // One name per organisation, whatever its case; another organisation may use it.
    expect((await actors.org_admin.client.postJson('/dashboard/admin/departments', { name: 'platform' })).status).toBe(409);
    expect((await created(actors.other_org_admin.client, { name: 'Platform' })).organisation_id).toBe(orgB);
    // Each org admin sees and touches their own organisation's only; another's is 404.
    const mine = await listed(actors.org_admin.client);
    expect(mine.every((d) => d.organisation_id === orgA)).toBe(true);
    expect(mine.map((d) => d.name)).toEqual(expect.arrayContaining(['Research', 'Sales', 'Platform']));
    expect((await actors.other_org_admin.client.postJson(`/dashboard/admin/departments/${team.id}`, { name: 'Mine now' })).status).toBe(
      404,
    );
    expect((await actors.other_org_admin.client.request('DELETE', `/dashboard/admin/departments/${team.id}`)).status).toBe(404);
    // An org admin cannot create in another organisation; a platform admin names one.
    expect((await actors.org_admin.client.postJson('/dashboard/admin/departments', { name: 'Elsewhere', org_id: orgB })).status).toBe(403);
    expect((await created(actors.platform_admin.client, { name: 'Support', org_id: orgB })).organisation_id).toBe(orgB);
    expect((await actors.platform_admin.client.postJson('/dashboard/admin/departments', { name: 'Nowhere' })).status).toBe(422);
    for (const bad of [{}, { name: '' }, { name: 'x'.repeat(201) }, { name: 5 }, { name: 'ok', extra: 1 }])
      expect((await actors.org_admin.client.postJson('/dashboard/admin/departments', bad)).status, JSON.stringify(bad)).toBe(422);
    // A refusal quoting a field name with a lone surrogate quotes it as valid text, at every level.
    const oddKey = await actors.org_admin.client.postJson('/dashboard/admin/departments', { name: 'ok', '\ud800zz': 1 });
    expect(oddKey.status).toBe(422);
    const oddText = await oddKey.text();
    expect(oddText).toContain('\ufffdzz');
    expect(oddText).not.toMatch(/\\ud800/i);

    // A team token issued for it, whose team name follows a rename.
    const issued = await actors.org_admin.client.postJson('/dashboard/settings/api-tokens', { name: 'ci', department_id: team.id });
    expect(issued.status, await issued.clone().text()).toBe(201);
    const renamed = await actors.org_admin.client.postJson(`/dashboard/admin/departments/${team.id}`, { name: 'Platform team' });
    expect(((await renamed.json()) as { department: Department }).department.name).toBe('Platform team');
    type Token = { token_id: number; team: string | null; department_id: number | null };
    const tokens = (
      (await (await actors.org_admin.client.get('/dashboard/settings/api-tokens', { accept: 'application/json' })).json()) as {
        data: Token[];
      }
    ).data.filter((t) => t.department_id === team.id);
    expect(tokens.map((t) => t.team)).toEqual(['Platform team']);
    const liveToken = await actors.org_admin.client.request('DELETE', `/dashboard/admin/departments/${team.id}`, {
      headers: { accept: 'application/json' },
    });
    expect([liveToken.status, (await liveToken.json()) as unknown]).toMatchObject([409, { error: { details: { live_tokens: 1 } } }]);
    expect((await actors.org_admin.client.postJson(`/dashboard/settings/api-tokens/${tokens[0]!.token_id}/revoke`, {})).status).toBe(200);
    expect((await actors.org_admin.client.postJson(`/dashboard/admin/departments/${team.id}`, { name: 'research' })).status).toBe(409);

    // In use: an invite into it, then a member moved into it — each holds the department.
    const { invite } = await createInvite(actors.org_admin.client, { email: `team-${Date.now()}@example.com`, department_id: team.id });
    const inUse = await actors.org_admin.client.request('DELETE', `/dashboard/admin/departments/${team.id}`);
    expect(inUse.status).toBe(409);
    expect(await inUse.text()).toContain('pending invite');
    await actors.org_admin.client.postJson(`/dashboard/admin/users/invite/${invite.id}/revoke`, {});
    const member = await makeTarget();
    expect(
      (await actors.org_admin.client.postJson(`/dashboard/admin/users/${member.id}/department`, { department_id: team.id })).status,
    ).toBe(200);
    expect((await listed(actors.org_admin.client)).find((d) => d.id === team.id)?.members).toBe(1);
    expect((await actors.org_admin.client.postJson(`/dashboard/admin/departments/${team.id}/delete`, {})).status).toBe(409);
    await actors.org_admin.client.postJson(`/dashboard/admin/users/${member.id}/department`, { department_id: '' });
    const removed = await actors.org_admin.client.postForm(`/dashboard/admin/departments/${team.id}/delete`, {});
    expect([removed.status, removed.headers.get('location')]).toEqual([303, '/dashboard/admin/departments?notice=deleted']);
    expect((await listed(actors.org_admin.client)).some((d) => d.id === team.id)).toBe(false);
  });

  it('the page lists them with a create form that works, names escaped', async () => {
    const form = await actors.org_admin.client.postForm('/dashboard/admin/departments', { name: '<b>Ops</b>' });
    expect([form.status, form.headers.get('location')]).toEqual([303, '/dashboard/admin/departments?notice=created']);
    const page = await (await actors.org_admin.client.get('/dashboard/admin/departments?notice=created')).text();
    expect(page).toContain('data-testid="departments-table"');
    expect(page).toContain('Department created.');
    expect(page).toContain('&lt;b&gt;Ops&lt;/b&gt;');
    expect(page).not.toContain('<b>Ops</b>');
    // Members never see the page, department admins neither (their team is given to them).
    expect((await actors.member.client.get('/dashboard/admin/departments')).status).toBe(403);
    expect((await actors.department_admin.client.get('/dashboard/admin/departments')).status).toBe(403);
    // An org admin in no organisation reaches no department (not every organisation's).
    const adrift = await signUp(portal, { role: 'org_admin' });
    const someone = (await listed(actors.org_admin.client))[0]!;
    expect((await adrift.client.get('/dashboard/admin/departments', { accept: 'application/json' })).status).toBe(403);
    expect((await adrift.client.postJson(`/dashboard/admin/departments/${someone.id}`, { name: 'Taken over' })).status).toBe(403);
    expect((await adrift.client.request('DELETE', `/dashboard/admin/departments/${someone.id}`)).status).toBe(403);
  });
});
