// Settings → API tokens against a real gateway sharing the portal's database and store: an org
// admin issues an svc_ token for a team, the official openai SDK uses it at once (paid from the
// creator's effective payer), a revoke is refused by the gateway within a second; department
// admins manage only their own team's tokens, members none.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import type { PortalHarness } from '../support/portal-harness.js';
import type { GatewayHarness } from '../support/gateway-harness.js';
import { fundWallet, signUp, startPortalWithGateway } from '../support/portal-users.js';
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

const signedIn = (organisationId: number, role: string, departmentId?: number) =>
  signUp(portal, { organisationId, role, ...(departmentId !== undefined && { departmentId }) });

const chat = (token: string) =>
  new OpenAI({ baseURL: `${gateway.gateway.url}/v1`, apiKey: token, maxRetries: 0 }).chat.completions
    .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'team call' }], max_tokens: 5 })
    .then(
      () => 200,
      (e: unknown) => (e instanceof OpenAI.APIError ? e.status : 0),
    );

describe('API tokens in the portal', () => {
  it('are issued for a team, work at the gateway at once, and stop when revoked', async () => {
    const knex = portal.database.knex;
    const [org] = (await knex('organisations')
      .insert({ name: 'Token Org', slug: `tok-${Date.now()}` })
      .returning('id')) as { id: number }[];
    const [data, web] = (await knex('departments')
      .insert([
        { organisation_id: org!.id, name: 'Data' },
        { organisation_id: org!.id, name: 'Web' },
      ])
      .returning('id')) as { id: number }[];
    const admin = await signedIn(org!.id, 'org_admin');
    const webAdmin = await signedIn(org!.id, 'department_admin', web!.id);
    const member = await signedIn(org!.id, 'member', data!.id);
    await fundWallet(gateway, `user:${admin.id}`, 5);

    const res = await admin.client.postJson('/dashboard/settings/api-tokens', { name: 'nightly batch', department_id: data!.id });
    expect(res.status).toBe(201);
    const created = (await res.json()) as { token_id: number; token: string; team: string; payer: string };
    expect(created).toMatchObject({ team: 'Data', payer: `user:${admin.id}` });
    expect(created.token).toMatch(/^svc_/);
    expect(await chat(created.token)).toBe(200);

    // The department admin of Web sees and manages Web's tokens only.
    expect((await webAdmin.client.postJson('/dashboard/settings/api-tokens', { name: 'x', department_id: data!.id })).status).toBe(422);
    const webToken = (await (
      await webAdmin.client.postJson('/dashboard/settings/api-tokens', { name: 'web', department_id: web!.id })
    ).json()) as {
      token_id: number;
    };
    const webList = (await (await webAdmin.client.get('/dashboard/settings/api-tokens', { accept: 'application/json' })).json()) as {
      data: { token_id: number }[];
    };
    expect(webList.data.map((t) => t.token_id)).toEqual([webToken.token_id]);
    // A Web token the org admin issues is the Web admin's to see and revoke too.
    const fromAdmin = (await (
      await admin.client.postJson('/dashboard/settings/api-tokens', { name: 'web 2', department_id: web!.id })
    ).json()) as {
      token_id: number;
    };
    expect((await webAdmin.client.postJson(`/dashboard/settings/api-tokens/${fromAdmin.token_id}/revoke`, {})).status).toBe(200);
    expect((await webAdmin.client.postJson(`/dashboard/settings/api-tokens/${created.token_id}/revoke`, {})).status).toBe(404);
    const adminList = (await (await admin.client.get('/dashboard/settings/api-tokens', { accept: 'application/json' })).json()) as {
      data: unknown[];
    };
    expect(adminList.data).toHaveLength(3);
    // Last use (to the hour, from the usage rollup): the Data token was used, the Web ones not.
    await waitFor('the token’s request in the rollup', async () => {
      const list = (await (await admin.client.get('/dashboard/settings/api-tokens', { accept: 'application/json' })).json()) as {
        data: { token_id: number; last_used_hour: string | null }[];
      };
      const data = list.data.find((t) => t.token_id === created.token_id)!;
      return data.last_used_hour !== null && list.data.filter((t) => t.last_used_hour === null).length === 2;
    });
    expect((await member.client.get('/dashboard/settings/api-tokens', { accept: 'application/json' })).status).toBe(403);
    for (const bad of [
      {},
      { name: '', department_id: data!.id },
      { name: 'x', department_id: 'data' },
      { name: 'x', department_id: 999999 },
    ])
      expect((await admin.client.postJson('/dashboard/settings/api-tokens', bad)).status, JSON.stringify(bad)).toBe(422);

    const revoked = await admin.client.postJson(`/dashboard/settings/api-tokens/${created.token_id}/revoke`, {});
    expect(await revoked.json()).toMatchObject({ status: 'revoked' });
    await waitFor('the gateway to refuse the revoked token', async () => (await chat(created.token)) === 401, 2_000);
    const page = await (await admin.client.get('/dashboard/settings/api-tokens')).text();
    expect(page).toContain('nightly batch');
    expect(page).not.toContain(created.token);
    // Whose wallet pays, in the key pages' words; the payer id only as the cell's title.
    expect(page).toContain(`<span title="user:${admin.id}">your own wallet</span>`);
    expect(page).not.toContain(`>user:${admin.id}<`);
  });

  it('a token form sent twice (the answering page reloaded) makes one token, and says where it is', async () => {
    const knex = portal.database.knex;
    const [org] = (await knex('organisations')
      .insert({ name: 'Twice Org', slug: `twice-${Date.now()}` })
      .returning('id')) as { id: number }[];
    const [team] = (await knex('departments').insert({ organisation_id: org!.id, name: 'Ops' }).returning('id')) as { id: number }[];
    const admin = await signedIn(org!.id, 'org_admin');
    const page = await (await admin.client.get('/dashboard/settings/api-tokens')).text();
    const formToken = /name="form_token" value="([^"]+)"/.exec(page)?.[1];
    expect(formToken).toBeDefined();
    const form = { name: 'reloaded', department_id: String(team!.id), form_token: formToken! };
    const first = await admin.client.postForm('/dashboard/settings/api-tokens', form);
    expect(first.status).toBe(201);
    expect(await first.text()).toContain('data-testid="token-secret"');
    const again = await admin.client.postForm('/dashboard/settings/api-tokens', form);
    expect(again.status).toBe(303);
    expect(again.headers.get('location')).toBe('/dashboard/settings/api-tokens?notice=already_created');
    expect(await (await admin.client.get(again.headers.get('location')!)).text()).toContain('This form was sent already');
    const list = (await (await admin.client.get('/dashboard/settings/api-tokens', { accept: 'application/json' })).json()) as {
      data: { name: string }[];
    };
    expect(list.data.filter((t) => t.name === 'reloaded')).toHaveLength(1);
  });
});
