// Projects against a real gateway sharing the portal's database and store: who creates them,
// exactly the seed's scope rules on the read-only admin view (each role sees what the rule says
// and nothing else), a project token paid by the project's wallet through the official SDK (not
// by the member who made it), members managed, revocation reaching the gateway, and merges that
// move projects without failing over a name.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import type { PortalClient } from '../support/portal-client.js';
import { fundWallet, signUp, startPortalWithGateway, type SignedInUser } from '../support/portal-users.js';
import { waitFor } from '../support/wait-for.js';
import { spendGroupWindow } from '../../core/budget/spend-groups.js';

let world: Awaited<ReturnType<typeof startPortalWithGateway>>;
const knex = () => world.portal.database.knex;
let orgA: number;
let orgB: number;
let research: number;
let sales: number;
const people = {} as Record<
  'platform_admin' | 'org_admin' | 'research_admin' | 'sales_admin' | 'member' | 'sales_member' | 'other_org_admin',
  SignedInUser
>;

interface Project {
  id: number;
  name: string;
  organisation_id: number;
  payer_id: string;
  balance_usd: number;
  spent_this_month_usd: number;
  members: number;
  active_tokens: number;
}

const unique = (name: string) => `${name} ${Math.random().toString(36).slice(2, 8)}`;

async function create(client: PortalClient, body: Record<string, unknown>, status = 201): Promise<Project> {
  const res = await client.postJson('/dashboard/projects', body);
  expect(res.status, await res.clone().text()).toBe(status);
  return ((await res.json()) as { project: Project }).project;
}

async function adminList(client: PortalClient, query = ''): Promise<{ status: number; ids: number[] }> {
  const res = await client.get(`/dashboard/admin/projects${query}`, { accept: 'application/json' });
  if (res.status !== 200) return { status: res.status, ids: [] };
  return { status: 200, ids: ((await res.json()) as { data: Project[] }).data.map((p) => p.id) };
}

beforeAll(async () => {
  world = await startPortalWithGateway();
  const stamp = Date.now();
  const orgs = (await knex()('organisations')
    .insert([
      { name: 'Projects Org A', slug: `projects-a-${stamp}` },
      { name: 'Projects Org B', slug: `projects-b-${stamp}` },
    ])
    .returning('id')) as { id: number }[];
  [orgA, orgB] = orgs.map((o) => o.id) as [number, number];
  const depts = (await knex()('departments')
    .insert([
      { organisation_id: orgA, name: 'Research' },
      { organisation_id: orgA, name: 'Sales' },
    ])
    .returning('id')) as { id: number }[];
  [research, sales] = depts.map((d) => d.id) as [number, number];
  const portal = world.portal;
  people.platform_admin = await signUp(portal, { role: 'platform_admin' });
  people.org_admin = await signUp(portal, { organisationId: orgA, role: 'org_admin' });
  people.research_admin = await signUp(portal, { organisationId: orgA, departmentId: research, role: 'department_admin' });
  people.sales_admin = await signUp(portal, { organisationId: orgA, departmentId: sales, role: 'department_admin' });
  people.member = await signUp(portal, { organisationId: orgA, departmentId: research });
  people.sales_member = await signUp(portal, { organisationId: orgA, departmentId: sales });
  people.other_org_admin = await signUp(portal, { organisationId: orgB, role: 'org_admin' });
});
afterAll(async () => {
  await world?.close();
});

describe('projects', () => {
  it('are created by department admins in their department and by org admins anywhere in the organisation', async () => {
    expect((await people.member.client.postJson('/dashboard/projects', { name: 'mine', department_id: research })).status).toBe(403);
    await create(people.research_admin.client, { name: unique('wrong team'), department_id: sales }, 422);
    await create(people.research_admin.client, { name: unique('organisation-wide') }, 422);
    const name = unique('Ranking');
    await create(people.research_admin.client, { name, department_id: research });
    // Names are unique in an organisation whatever their case, but another organisation may reuse one.
    await create(people.org_admin.client, { name: name.toUpperCase(), department_id: sales }, 409);
    await create(people.other_org_admin.client, { name });
    await create(people.org_admin.client, { name: unique('Shared platform') });
    for (const bad of [{}, { name: '' }, { name: 'x'.repeat(201) }, { name: 'ok', department_id: 'ten' }])
      expect((await people.org_admin.client.postJson('/dashboard/projects', bad)).status, JSON.stringify(bad)).toBe(422);
  });

  it('the admin view holds exactly what the scope rule allows for each role', async () => {
    const p1 = await create(people.research_admin.client, { name: unique('P1'), department_id: research });
    const p2 = await create(people.sales_admin.client, { name: unique('P2'), department_id: sales });
    const p3 = await create(people.org_admin.client, { name: unique('P3') });
    const p4 = await create(people.other_org_admin.client, { name: unique('P4') });
    // The research admin belongs to P2 without having created it.
    expect(
      (await people.sales_admin.client.postJson(`/dashboard/projects/${p2.id}/members`, { email: people.research_admin.email })).status,
    ).toBe(200);
    const ours = new Set([p1.id, p2.id, p3.id, p4.id]);
    const seen = async (client: PortalClient, query = '') => {
      const list = await adminList(client, query);
      expect(list.status).toBe(200);
      return list.ids.filter((id) => ours.has(id)).sort((a, b) => a - b);
    };
    const sorted = (...ps: Project[]) => ps.map((p) => p.id).sort((a, b) => a - b);

    expect(await seen(people.platform_admin.client)).toEqual(sorted(p1, p2, p3, p4));
    // The dropdown narrows a platform admin's view to one organisation, and only that one.
    const narrowed = await adminList(people.platform_admin.client, `?org_id=${orgB}`);
    expect(narrowed.ids.filter((id) => ours.has(id))).toEqual([p4.id]);
    expect(new Set(await knex()('projects').whereIn('id', narrowed.ids).pluck('organisation_id'))).toEqual(new Set([orgB]));
    expect((await adminList(people.platform_admin.client, '?org_id=abc')).status).toBe(422);
    // An organisation that does not exist is 404, as choosing it with set-admin-org is (not an empty list).
    expect((await adminList(people.platform_admin.client, '?org_id=999999')).status).toBe(404);
    // The projects page takes no query: a parameter it would ignore is 422, as on the keys page.
    expect((await people.platform_admin.client.get('/dashboard/projects?x=1', { accept: 'application/json' })).status).toBe(422);
    // With an organisation chosen for the session, "All organisations" (org_id=all) still shows every one.
    expect((await people.platform_admin.client.postJson('/dashboard/set-admin-org', { org_id: String(orgB) })).status).toBeLessThan(400);
    expect((await adminList(people.platform_admin.client)).ids.filter((id) => ours.has(id))).toEqual([p4.id]);
    const all = await adminList(people.platform_admin.client, '?org_id=all');
    expect(all.ids.filter((id) => ours.has(id)).sort((a, b) => a - b)).toEqual(sorted(p1, p2, p3, p4));
    await people.platform_admin.client.postJson('/dashboard/set-admin-org', { org_id: '' });
    // Org admins: their organisation, every department, and nothing of another organisation.
    const orgView = (await adminList(people.org_admin.client)).ids;
    expect(orgView.filter((id) => ours.has(id)).sort((a, b) => a - b)).toEqual(sorted(p1, p2, p3));
    const orgRows = (await knex()('projects').whereIn('id', orgView).pluck('organisation_id')) as number[];
    expect(new Set(orgRows)).toEqual(new Set([orgA]));
    // A query cannot widen an org admin's view.
    expect((await adminList(people.org_admin.client, `?org_id=${orgB}`)).ids).not.toContain(p4.id);
    // Department admins: what they created or belong to.
    expect(await seen(people.research_admin.client)).toEqual(sorted(p1, p2));
    expect(await seen(people.sales_admin.client)).toEqual(sorted(p2));
    expect(await seen(people.other_org_admin.client)).toEqual(sorted(p4));
    // Below admin: 403; signed out: 401 for JSON and the sign-in page for a browser.
    expect((await adminList(people.member.client)).status).toBe(403);
    expect((await fetch(`${world.portal.url}/dashboard/admin/projects`, { headers: { accept: 'application/json' } })).status).toBe(401);
    const page = await fetch(`${world.portal.url}/dashboard/admin/projects`, { redirect: 'manual' });
    expect(page.status).toBe(303);
    expect(page.headers.get('location')).toContain('/login');
    // The page itself: the table, the scope, the dropdown for platform admins only.
    const html = await (await people.platform_admin.client.get('/dashboard/admin/projects')).text();
    expect(html).toContain('data-testid="admin-projects-table"');
    expect(html).toContain('data-testid="projects-org-filter"');
    expect(await (await people.org_admin.client.get('/dashboard/admin/projects')).text()).not.toContain('projects-org-filter');
  });

  it("a project token is paid by the project's wallet, used through the SDK, and stops when revoked", async () => {
    const project = await create(people.research_admin.client, { name: unique('Billing'), department_id: research });
    const admin = people.research_admin.client;
    // Members: active people of the same organisation only; the last member stays.
    expect((await admin.postJson(`/dashboard/projects/${project.id}/members`, { email: people.other_org_admin.email })).status).toBe(422);
    expect((await admin.postJson(`/dashboard/projects/${project.id}/members`, { email: 'not-an-address' })).status).toBe(422);
    expect((await admin.postJson(`/dashboard/projects/${project.id}/members`, { email: people.member.email.toUpperCase() })).status).toBe(
      200,
    );
    // Outsiders see nothing, exactly as for a project that does not exist.
    expect((await people.sales_member.client.get(`/dashboard/projects/${project.id}`, { accept: 'application/json' })).status).toBe(404);
    expect((await people.sales_member.client.postJson(`/dashboard/projects/${project.id}/tokens`, { name: 'x' })).status).toBe(404);
    expect((await people.member.client.get('/dashboard/projects/999999999', { accept: 'application/json' })).status).toBe(404);

    // A plain member of the project issues a token.
    const issued = await people.member.client.postJson(`/dashboard/projects/${project.id}/tokens`, { name: 'indexer' });
    expect(issued.status, await issued.clone().text()).toBe(201);
    const { created } = (await issued.json()) as { created: { token: string; token_id: number } };
    expect(created.token.startsWith('svc_')).toBe(true);
    const sdk = new OpenAI({ baseURL: `${world.gateway.gateway.url}/v1`, apiKey: created.token, maxRetries: 0 });
    const chat = () =>
      sdk.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'project work' }], max_tokens: 5 }).then(
        () => 'ok',
        (e: unknown) => (e instanceof OpenAI.APIError ? `${e.status} ${String(e.code)}` : 'error'),
      );
    expect(await chat()).toBe('403 billing_limit_reached');
    await fundWallet(world.gateway, project.payer_id, 5);
    await fundWallet(world.gateway, `user:${people.member.id}`, 5);
    expect(await chat()).toBe('ok');
    const balance = async (payer: string) =>
      Number(
        (
          (await knex()('wallet_entries')
            .where({ payer_id: payer })
            .sum({ n: knex().raw('coalesce(amount_nano, amount_micro * 1000)') })
            .first()) as { n: string | null }
        ).n ?? 0,
      );
    await waitFor('the debit on the project wallet', async () => (await balance(project.payer_id)) < 5e9);
    expect(await balance(`user:${people.member.id}`)).toBe(5e9);
    await waitFor('the spend on the project page', async () => {
      const res = await admin.get(`/dashboard/projects/${project.id}`, { accept: 'application/json' });
      const body = (await res.json()) as { project: Project; tokens: { status: string }[] };
      return body.project.spent_this_month_usd > 0 && body.project.active_tokens === 1 && body.project.balance_usd < 5;
    });

    // The organisation naming a billing user moves its members' keys to that wallet — not the
    // project's token, which the project pays whoever issued it (it moved, and left the project's page).
    const nominate = (userId: number | '') =>
      people.org_admin.client.postJson('/dashboard/admin/organisation/billing-user', { user_id: userId });
    expect((await nominate(people.org_admin.id)).status).toBe(200);
    try {
      const token = (await knex()('api_keys').where({ number: created.token_id }).first('payer_id')) as { payer_id: string };
      expect(token.payer_id).toBe(project.payer_id);
      const after = (await (await admin.get(`/dashboard/projects/${project.id}`, { accept: 'application/json' })).json()) as {
        project: Project;
      };
      expect(after.project.active_tokens).toBe(1);
    } finally {
      expect((await nominate('')).status).toBe(200);
    }

    const revoked = await admin.postJson(`/dashboard/projects/${project.id}/tokens/${created.token_id}/revoke`, {});
    expect(revoked.status).toBe(200);
    await waitFor('the gateway to refuse the revoked token', async () => (await chat()).startsWith('401'), 2_000, 25);
    expect((await admin.postJson(`/dashboard/projects/${project.id}/tokens/999999999/revoke`, {})).status).toBe(404);

    // Members come and go; the last one stays.
    expect((await admin.postJson(`/dashboard/projects/${project.id}/members/${people.member.id}/remove`, {})).status).toBe(200);
    expect((await people.member.client.get(`/dashboard/projects/${project.id}`, { accept: 'application/json' })).status).toBe(404);
    expect((await admin.postJson(`/dashboard/projects/${project.id}/members/${people.research_admin.id}/remove`, {})).status).toBe(409);
    // The member's own page lists what they belong to.
    const mine = (await (await admin.get('/dashboard/projects', { accept: 'application/json' })).json()) as { data: Project[] };
    expect(mine.data.map((p) => p.id)).toContain(project.id);
    expect(await (await admin.get('/dashboard/projects')).text()).toContain('data-testid="projects-table"');
  });

  it('a member who leaves the project, or the organisation, leaves their tokens for it behind, revoked', async () => {
    const project = await create(people.research_admin.client, { name: unique('Leaving'), department_id: research });
    const admin = people.research_admin.client;
    const leaver = await signUp(world.portal, { organisationId: orgA, departmentId: research });
    const issue = async (name: string) => {
      expect((await admin.postJson(`/dashboard/projects/${project.id}/members`, { email: leaver.email })).status).toBe(200);
      const res = await leaver.client.postJson(`/dashboard/projects/${project.id}/tokens`, { name });
      expect(res.status, await res.clone().text()).toBe(201);
      return ((await res.json()) as { created: { token: string; token_id: number } }).created;
    };
    await fundWallet(world.gateway, project.payer_id, 5);
    const chat = (token: string) =>
      new OpenAI({ baseURL: `${world.gateway.gateway.url}/v1`, apiKey: token, maxRetries: 0 }).chat.completions
        .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'project work' }], max_tokens: 5 })
        .then(
          () => 'ok',
          (e: unknown) => (e instanceof OpenAI.APIError ? `${e.status} ${String(e.code)}` : 'error'),
        );
    const status = async (tokenId: number) =>
      (await knex()('api_keys').where({ number: tokenId }).first('status', 'organisation_id')) as {
        status: string;
        organisation_id: number;
      };

    // Removed from the project: the secret went with them, so the token stops working.
    const first = await issue('before removal');
    expect(await chat(first.token)).toBe('ok');
    expect((await admin.postJson(`/dashboard/projects/${project.id}/members/${leaver.id}/remove`, {})).status).toBe(200);
    expect((await status(first.token_id)).status).toBe('revoked');
    await waitFor('the gateway to refuse the removed member’s token', async () => (await chat(first.token)).startsWith('401'), 2_000, 25);

    // Moved to another organisation: out of the project, the token revoked and still the project’s
    // organisation’s — the new organisation’s administrators cannot see or change it.
    const second = await issue('before the move');
    expect(await chat(second.token)).toBe('ok');
    // Both organisations' monthly spend counters are dropped, to be rebuilt from the usage rollup.
    const counters = [orgA, orgB].map((id) => spendGroupWindow({ scope: 'organisation', id }, new Date()).counterKey);
    expect(Object.keys(await world.portal.store.hashGetAll(counters[0]!)).length, 'the request counted in Acme').toBeGreaterThan(0);
    expect((await people.platform_admin.client.postJson(`/dashboard/admin/users/${leaver.id}/org`, { org_id: orgB })).status).toBe(200);
    for (const counter of counters) expect(await world.portal.store.hashGetAll(counter), counter).toEqual({});
    expect(await status(second.token_id)).toEqual({ status: 'revoked', organisation_id: orgA });
    await waitFor('the gateway to refuse the moved member’s token', async () => (await chat(second.token)).startsWith('401'), 2_000, 25);
    expect((await people.other_org_admin.client.get(`/dashboard/keys/${second.token_id}`, { accept: 'application/json' })).status).toBe(
      404,
    );
    expect(
      (await people.other_org_admin.client.postJson(`/dashboard/keys/${second.token_id}`, { action: 'update', name: 'renamed' })).status,
    ).toBe(404);
    const detail = (await (await admin.get(`/dashboard/projects/${project.id}`, { accept: 'application/json' })).json()) as {
      members: { email: string }[];
      tokens: { name: string; status: string }[];
    };
    expect(detail.members.map((m) => m.email)).not.toContain(leaver.email);
    expect(detail.tokens.filter((t) => t.name === 'before the move').map((t) => t.status)).toEqual(['revoked']);
  });

  it('a project token form sent twice (the answering page reloaded) makes one token, and says where it is', async () => {
    const project = await create(people.research_admin.client, { name: unique('Twice'), department_id: research });
    const client = people.research_admin.client;
    const page = await (await client.get(`/dashboard/projects/${project.id}`)).text();
    const formToken = /name="form_token" value="([^"]+)"/.exec(page)?.[1];
    expect(formToken).toBeDefined();
    const form = { name: 'reloaded', form_token: formToken! };
    expect((await client.postForm(`/dashboard/projects/${project.id}/tokens`, form)).status).toBe(201);
    const again = await client.postForm(`/dashboard/projects/${project.id}/tokens`, form);
    expect(again.headers.get('location')).toBe(`/dashboard/projects/${project.id}?notice=token_already_created`);
    expect(await (await client.get(again.headers.get('location')!)).text()).toContain('This form was sent already');
    const detail = (await (await client.get(`/dashboard/projects/${project.id}`, { accept: 'application/json' })).json()) as {
      tokens: { name: string }[];
    };
    expect(detail.tokens.filter((t) => t.name === 'reloaded')).toHaveLength(1);
  });

  it('a merge moves projects into the target, renaming one whose name is taken there', async () => {
    const stamp = Date.now();
    const [target, source] = (await knex()('organisations')
      .insert([
        { name: 'Merge Target', slug: `merge-target-${stamp}` },
        { name: 'Merge Source', slug: `merge-source-${stamp}` },
      ])
      .returning('id')) as { id: number }[];
    const creatorT = await signUp(world.portal, { organisationId: target!.id, role: 'org_admin' });
    const creatorS = await signUp(world.portal, { organisationId: source!.id, role: 'org_admin' });
    const kept = await create(creatorT.client, { name: 'Search' });
    const clash = await create(creatorS.client, { name: 'search' });
    const other = await create(creatorS.client, { name: 'Ads' });
    const merged = await people.platform_admin.client.postJson('/dashboard/admin/organisations/merge', {
      target_org_id: target!.id,
      source_org_ids: String(source!.id),
    });
    expect(merged.status, await merged.clone().text()).toBe(200);
    const rows = (await knex()('projects')
      .whereIn('id', [kept.id, clash.id, other.id])
      .orderBy('id')
      .select('id', 'name', 'organisation_id')) as {
      name: string;
      organisation_id: number;
    }[];
    expect(rows.map((r) => r.organisation_id)).toEqual([target!.id, target!.id, target!.id]);
    expect(rows.map((r) => r.name)).toEqual(['Search', 'search (from Merge Source)', 'Ads']);
  });
});
