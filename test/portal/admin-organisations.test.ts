// Organisations for platform administrators against a real gateway sharing the portal's
// database and store: the list's figures equal the data (members, keys, spend from the usage
// rollup, wallet balances), create/update/delete with their conflicts, and a merge of two
// organisations with members, keys, wallets and history into a third — totals equal before and
// after, who pays follows at the gateway, and a merge that fails part-way changes nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import type { PortalHarness } from '../support/portal-harness.js';
import type { GatewayHarness } from '../support/gateway-harness.js';
import { fundWallet, signUp, startPortalWithGateway, type SignedInUser } from '../support/portal-users.js';
import { waitFor } from '../support/wait-for.js';

let world: Awaited<ReturnType<typeof startPortalWithGateway>>;
let portal: PortalHarness;
let gateway: GatewayHarness;
let platform: SignedInUser;
const knex = () => portal.database.knex;

interface Summary {
  id: number;
  name: string;
  slug: string;
  members: number;
  active_keys: number;
  spend_this_month_usd: number;
  balance_usd: number;
  billing_exempt: boolean;
  monthly_budget_usd: number | null;
  billing_user_id: number | null;
}

const list = async (): Promise<Summary[]> => {
  const res = await platform.client.get('/dashboard/admin/organisations', { accept: 'application/json' });
  expect(res.status).toBe(200);
  return ((await res.json()) as { data: Summary[] }).data;
};

const create = async (name: string, slug?: string) => {
  const res = await platform.client.postJson('/dashboard/admin/organisations', { name, ...(slug && { slug }) });
  expect(res.status, await res.clone().text()).toBe(201);
  return ((await res.json()) as { organisation: Summary }).organisation;
};

/** A member of `orgId` with `usd` in their wallet and one key that made `calls` requests. */
async function memberWithSpend(orgId: number, usd: number, calls: number) {
  const user = await signUp(portal, { organisationId: orgId });
  await fundWallet(gateway, `user:${user.id}`, usd);
  const created = (await (await user.client.postJson('/dashboard/keys/new', { name: 'spender' })).json()) as {
    secret: string;
    key: { gateway_key_id: string };
  };
  const sdk = new OpenAI({ baseURL: `${gateway.gateway.url}/v1`, apiKey: created.secret, maxRetries: 0 });
  for (let i = 0; i < calls; i++)
    await sdk.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: `call ${i}` }], max_tokens: 5 });
  return { user, secret: created.secret, keyId: created.key.gateway_key_id, calls };
}

const rolledUp = async (keyIds: string[]) => {
  const [row] = await knex()('usage_hourly').whereIn('key_id', keyIds).sum({ n: 'requests' });
  return Number((row as { n: string | null }).n ?? 0);
};

beforeAll(async () => {
  world = await startPortalWithGateway();
  ({ portal, gateway } = world);
  platform = await signUp(portal, { role: 'platform_admin' });
});
afterAll(async () => {
  await world?.close();
});

describe('organisations', () => {
  it('creates with a slug from the name, refuses a taken or malformed slug, updates, and deletes only when empty', async () => {
    const acme = await create('Acme Ltd. Ünïcode');
    expect(acme.slug).toBe('acme-ltd-unicode');
    expect((await platform.client.postJson('/dashboard/admin/organisations', { name: 'Other', slug: acme.slug })).status).toBe(409);
    expect((await platform.client.postJson('/dashboard/admin/organisations', { name: 'Other', slug: 'Bad Slug' })).status).toBe(422);
    // A slug nobody typed never fails: the same name again, or one without Latin letters, gets the next free one.
    expect((await create('Acme Ltd. Ünïcode')).slug).toBe('acme-ltd-unicode-2');
    const [first, second] = [await create('日本株式会社'), await create('日本株式会社')];
    expect([first.slug, second.slug]).toEqual([
      expect.stringMatching(/^organisation(-\d+)?$/),
      expect.stringMatching(/^organisation-\d+$/),
    ]);
    expect(second.slug).not.toBe(first.slug);
    expect((await platform.client.postJson('/dashboard/admin/organisations', { name: '' })).status).toBe(422);

    const updated = await platform.client.postJson(`/dashboard/admin/organisations/${acme.id}`, {
      name: 'Acme',
      slug: 'acme',
      monthly_budget: '250.5',
      billing_exempt: true,
    });
    expect(updated.status, await updated.clone().text()).toBe(200);
    expect(((await updated.json()) as { organisation: Summary }).organisation).toMatchObject({
      name: 'Acme',
      slug: 'acme',
      monthly_budget_usd: 250.5,
      billing_exempt: true,
    });
    expect((await platform.client.postJson(`/dashboard/admin/organisations/${acme.id}`, {})).status).toBe(422);
    expect((await platform.client.postJson('/dashboard/admin/organisations/999999', { name: 'x' })).status).toBe(404);

    const member = await signUp(portal, { organisationId: acme.id });
    const refused = await platform.client.request('DELETE', `/dashboard/admin/organisations/${acme.id}`, {
      headers: { accept: 'application/json' },
    });
    expect(refused.status).toBe(409);
    expect(await refused.text()).toContain('1 user');
    await knex()('users').where({ id: member.id }).update({ organisation_id: null });
    const deleted = await platform.client.request('DELETE', `/dashboard/admin/organisations/${acme.id}`, {
      headers: { accept: 'application/json' },
    });
    expect(deleted.status).toBe(200);
    expect((await list()).some((o) => o.id === acme.id)).toBe(false);
  });

  it('merges two organisations into a third: totals equal, who pays follows, sources gone', async () => {
    const target = await create(`Target ${Date.now()}`);
    const sourceA = await create(`Source A ${Date.now()}`);
    const sourceB = await create(`Source B ${Date.now()}`);
    const dept = (await knex()('departments').insert({ organisation_id: sourceA.id, name: 'Moving dept' }).returning('id')) as {
      id: number;
    }[];
    const t1 = await memberWithSpend(target.id, 3, 1);
    const a1 = await memberWithSpend(sourceA.id, 5, 2);
    const a2 = await memberWithSpend(sourceA.id, 7, 1);
    const b1 = await memberWithSpend(sourceB.id, 11, 3);
    await knex()('users').where({ id: a2.user.id }).update({ department_id: dept[0]!.id });
    const all = [t1, a1, a2, b1];
    const calls = all.reduce((n, m) => n + m.calls, 0);
    await waitFor('every request in the rollup', async () => (await rolledUp(all.map((m) => m.keyId))) === calls);

    const before = (await list()).filter((o) => [target.id, sourceA.id, sourceB.id].includes(o.id));
    const total = (field: 'members' | 'active_keys' | 'spend_this_month_usd' | 'balance_usd', rows: Summary[]) =>
      Math.round(rows.reduce((n, o) => n + o[field], 0) * 1e9);
    expect(total('members', before)).toBe(4e9);
    expect(total('active_keys', before)).toBe(4e9);

    const data = (await (
      await platform.client.get(`/dashboard/admin/organisations/${sourceA.id}/merge-data`, { accept: 'application/json' })
    ).json()) as {
      members: { id: number }[];
      billing_user_id: number | null;
    };
    expect(data.members.map((m) => m.id).sort()).toEqual([a1.user.id, a2.user.id].sort());

    // A merge that fails part-way (a role for someone who is not a member) changes nothing.
    const failed = await platform.client.postForm('/dashboard/admin/organisations/merge', {
      target_org_id: String(target.id),
      source_org_ids: `${sourceA.id}, ${sourceB.id}`,
      [`role_${platform.id}`]: 'org_admin',
    });
    expect(failed.status).toBe(422);
    expect((await list()).filter((o) => [target.id, sourceA.id, sourceB.id].includes(o.id))).toEqual(before);

    const merged = await platform.client.postJson('/dashboard/admin/organisations/merge', {
      target_org_id: target.id,
      source_org_ids: `${sourceA.id},${sourceB.id}`,
      billing_user_id: b1.user.id,
      [`role_${a1.user.id}`]: 'org_admin',
    });
    expect(merged.status, await merged.clone().text()).toBe(200);
    const after = (await list()).filter((o) => [target.id, sourceA.id, sourceB.id].includes(o.id));
    expect(after.map((o) => o.id)).toEqual([target.id]);
    for (const field of ['members', 'active_keys', 'spend_this_month_usd', 'balance_usd'] as const)
      expect(total(field, after), field).toBe(total(field, before));
    expect(after[0]!.billing_user_id).toBe(b1.user.id);
    const moved = (await knex()('users')
      .whereIn('id', [a1.user.id, a2.user.id, b1.user.id])
      .select('id', 'organisation_id', 'role', 'department_id')) as {
      id: number;
      organisation_id: number;
      role: string;
      department_id: number | null;
    }[];
    expect(moved.every((u) => u.organisation_id === target.id)).toBe(true);
    expect(moved.find((u) => u.id === a1.user.id)?.role).toBe('org_admin');
    expect(moved.find((u) => u.id === a2.user.id)?.department_id).toBe(dept[0]!.id);
    const payers = (await knex()('api_keys')
      .whereIn(
        'id',
        all.map((m) => m.keyId),
      )
      .pluck('payer_id')) as string[];
    expect(new Set(payers)).toEqual(new Set([`user:${b1.user.id}`]));

    // At the gateway, a moved member's next request is paid by the new billing user.
    const before$ = Number(
      (
        (
          await knex()('wallet_entries')
            .where({ payer_id: `user:${b1.user.id}` })
            .count({ n: '*' })
        )[0] as { n: string }
      ).n,
    );
    await waitFor('the moved key to charge the billing user', async () => {
      await new OpenAI({ baseURL: `${gateway.gateway.url}/v1`, apiKey: a2.secret, maxRetries: 0 }).chat.completions.create({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'after the merge' }],
        max_tokens: 5,
      });
      const [row] = await knex()('wallet_entries')
        .where({ payer_id: `user:${b1.user.id}` })
        .count({ n: '*' });
      return Number((row as { n: string }).n) > before$;
    });

    for (const [body, status] of [
      [{ target_org_id: target.id, source_org_ids: String(target.id) }, 422],
      [{ target_org_id: target.id, source_org_ids: 'x,y' }, 422],
      [{ target_org_id: target.id, source_org_ids: '999999' }, 404],
      [{ source_org_ids: '1' }, 422],
    ] as const) {
      expect((await platform.client.postJson('/dashboard/admin/organisations/merge', body)).status, JSON.stringify(body)).toBe(status);
    }
  });

  it("a merge holds the role rules of the users page: no role above the merger's touched, no last owner lost", async () => {
    const [into, from] = [await create(`Into ${Date.now()}`), await create(`From ${Date.now()}`)];
    const owner = await signUp(portal, { organisationId: from.id, role: 'owner' });
    const merge = (roles: Record<string, string>) =>
      platform.client.postJson('/dashboard/admin/organisations/merge', {
        target_org_id: into.id,
        source_org_ids: String(from.id),
        ...roles,
      });
    // A platform admin cannot demote an owner by merging its organisation: refused, and nothing merged.
    const refused = await merge({ [`role_${owner.id}`]: 'member' });
    expect(refused.status).toBe(403);
    expect((await list()).some((o) => o.id === from.id)).toBe(true);
    expect(((await knex()('users').where({ id: owner.id }).first('role')) as { role: string }).role).toBe('owner');
    // Leaving the role alone merges, and the owner stays one.
    expect((await merge({})).status).toBe(200);
    expect(((await knex()('users').where({ id: owner.id }).first('role')) as { role: string }).role).toBe('owner');
  });

  it("a merge writes each moved member's new organisation and each changed role to their activity", async () => {
    const [acme, beta] = [await create(`Acme ${Date.now()}`), await create(`Beta ${Date.now()}`)];
    const stays = await signUp(portal, { organisationId: acme.id });
    const betaAdmin = await signUp(portal, { organisationId: beta.id, role: 'org_admin' });
    const betaMember = await signUp(portal, { organisationId: beta.id });
    const merged = await platform.client.postJson('/dashboard/admin/organisations/merge', {
      target_org_id: acme.id,
      source_org_ids: String(beta.id),
      [`role_${betaAdmin.id}`]: 'member',
    });
    expect(merged.status, await merged.clone().text()).toBe(200);
    const activity = async (user: SignedInUser) =>
      (
        (await (await user.client.get('/dashboard/activity', { accept: 'application/json' })).json()) as {
          data: { kind: string; summary: string; by_administrator: boolean }[];
        }
      ).data
        .filter((a) => a.kind === 'account_administered')
        .map((a) => [a.summary, a.by_administrator]);
    const moved = ['Organisation changed (organisations merged) by a platform administrator', true];
    expect(await activity(betaAdmin)).toEqual(
      expect.arrayContaining([moved, ['Role changed from org_admin to member (organisations merged) by a platform administrator', true]]),
    );
    expect(await activity(betaMember)).toEqual([moved]);
    expect(await activity(stays)).toEqual([]);
  });

  it('a merge renames a moved department whose name the target uses, any case, as it does projects', async () => {
    const [acme, beta] = [await create(`Acme D ${Date.now()}`), await create(`Beta D ${Date.now()}`)];
    await knex()('departments').insert([
      { organisation_id: acme.id, name: 'Research' },
      { organisation_id: acme.id, name: 'Ops' },
    ]);
    const [betaResearch] = (await knex()('departments')
      .insert([
        { organisation_id: beta.id, name: 'RESEARCH' },
        { organisation_id: beta.id, name: 'Ops' },
        { organisation_id: beta.id, name: 'Sales' },
      ])
      .returning('id')) as { id: number }[];
    const researcher = await signUp(portal, { organisationId: beta.id, departmentId: betaResearch!.id });
    const merged = await platform.client.postJson('/dashboard/admin/organisations/merge', {
      target_org_id: acme.id,
      source_org_ids: String(beta.id),
    });
    expect(merged.status, await merged.clone().text()).toBe(200);
    const names = (await knex()('departments').where({ organisation_id: acme.id }).orderBy('id').pluck('name')) as string[];
    expect(names).toEqual(['Research', 'Ops', `RESEARCH (from ${beta.name})`, `Ops (from ${beta.name})`, 'Sales']);
    expect(new Set(names.map((n) => n.toLowerCase())).size).toBe(names.length);
    // The department moved (renamed), with its people.
    expect(((await knex()('users').where({ id: researcher.id }).first('department_id')) as { department_id: number }).department_id).toBe(
      betaResearch!.id,
    );
  });

  it('only platform admins and owners reach the organisations pages', async () => {
    const [org] = (await knex()('organisations')
      .insert({ name: 'Closed', slug: `closed-${Date.now()}` })
      .returning('id')) as { id: number }[];
    const orgAdmin = await signUp(portal, { organisationId: org!.id, role: 'org_admin' });
    expect((await orgAdmin.client.get('/dashboard/admin/organisations', { accept: 'application/json' })).status).toBe(403);
    expect((await orgAdmin.client.postJson(`/dashboard/admin/organisations/${org!.id}`, { name: 'Mine now' })).status).toBe(403);
    const page = await (await platform.client.get('/dashboard/admin/organisations')).text();
    expect(page).toContain('data-testid="organisations-table"');
    expect(page).toContain('data-testid="org-merge"');
  });
});
