// An invitation grants its role in its sender's name (core/identity/administration.ts
// mayGrantInvite): one from someone since demoted, moved or deleted is withdrawn, and one whose
// sender is suspended (or may otherwise no longer grant it) is refused at acceptance with a
// catalogue error while the landing page says why. Found by an outside probe: an org admin's
// invitation still made its addressee org admin after the owner demoted, suspended or deleted them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Reply } from '../support/http-assertions.js';
import { expectError } from '../support/http-assertions.js';
import type { PortalClient } from '../support/portal-client.js';
import { startPortalHarness, type PortalHarness } from '../support/portal-harness.js';
import { signUp, type SignedInUser } from '../support/portal-users.js';

let portal: PortalHarness;
let owner: SignedInUser;
let tag = 0;
beforeAll(async () => {
  portal = await startPortalHarness();
  owner = await signUp(portal, { role: 'owner' });
});
afterAll(async () => {
  await portal?.close();
});

const knex = () => portal.database.knex;
const reply = async (res: Response): Promise<Reply> => ({
  status: res.status,
  headers: res.headers,
  body: (await res.json()) as Reply['body'],
});

async function organisation(): Promise<number> {
  const [row] = (await knex()('organisations')
    .insert({ name: `Invite Sender ${++tag}`, slug: `invite-sender-${tag}-${Date.now()}` })
    .returning('id')) as { id: number }[];
  return row!.id;
}

/** `sender` invites a fresh address as `role`; the invite's id and its link's path. */
async function invite(
  sender: PortalClient,
  role: string,
  extra: Record<string, unknown> = {},
): Promise<{ id: number; email: string; path: string }> {
  const email = `invitee-${++tag}-${Date.now()}@example.com`;
  const res = await sender.postJson('/dashboard/admin/users/invite', { email, role, ...extra });
  expect(res.status, await res.clone().text()).toBe(201);
  const { invite: created } = (await res.json()) as { invite: { id: number } };
  return { id: created.id, email, path: new URL(await portal.emailedLink(email, '/invite/')).pathname };
}

const inviteStatus = async (id: number) => ((await knex()('invites').where({ id }).first('status')) as { status: string }).status;
const placeOf = async (userId: number) => knex()('users').where({ id: userId }).first('organisation_id', 'role');
const ownerDoes = async (userId: number, what: string, body: unknown) => {
  const res = await owner.client.postJson(`/dashboard/admin/users/${userId}/${what}`, body);
  expect(res.status, await res.clone().text()).toBe(200);
};

describe('an invitation and its sender', () => {
  it('is withdrawn when the sender is demoted below the invited role: accepting is refused and grants nothing', async () => {
    const org = await organisation();
    const bob = await signUp(portal, { organisationId: org, role: 'org_admin' });
    const sent = await invite(bob.client, 'org_admin');
    await ownerDoes(bob.id, 'role', { role: 'member' });
    expect(await inviteStatus(sent.id)).toBe('revoked');
    const ivy = await signUp(portal, { email: sent.email });
    expect(await (await ivy.client.get(sent.path)).text()).toContain('This invitation was withdrawn');
    expectError(await reply(await ivy.client.postJson(`${sent.path}/accept`, {})), 409, 'conflict');
    expect(await placeOf(ivy.id)).toEqual({ organisation_id: null, role: 'member' });
  });

  it('a demotion keeps the invitations the new role may still grant', async () => {
    const org = await organisation();
    const bob = await signUp(portal, { organisationId: org, role: 'org_admin' });
    const high = await invite(bob.client, 'org_admin');
    const low = await invite(bob.client, 'member');
    const department = (
      (await knex()('departments')
        .insert({ organisation_id: org, name: `Team ${tag}` })
        .returning('id')) as { id: number }[]
    )[0]!.id;
    const inTeam = await invite(bob.client, 'member', { department_id: department });
    await knex()('users').where({ id: bob.id }).update({ department_id: department });
    await ownerDoes(bob.id, 'role', { role: 'department_admin' });
    // A department admin invites into their own department only, and nobody above their role.
    expect([await inviteStatus(high.id), await inviteStatus(low.id), await inviteStatus(inTeam.id)]).toEqual([
      'revoked',
      'revoked',
      'pending',
    ]);
    const kim = await signUp(portal, { email: inTeam.email });
    const accepted = await kim.client.postJson(`${inTeam.path}/accept`, {});
    expect(accepted.status, await accepted.clone().text()).toBe(200);
    expect(await placeOf(kim.id)).toEqual({ organisation_id: org, role: 'member' });
  });

  it('is refused while the sender is suspended, with the reason on the page, and accepted once they are back', async () => {
    const org = await organisation();
    const bob = await signUp(portal, { organisationId: org, role: 'org_admin' });
    const sent = await invite(bob.client, 'org_admin');
    await ownerDoes(bob.id, 'status', { status: 'suspended' });
    // Suspension may be undone, so the invitation stays pending; it grants nothing meanwhile.
    expect(await inviteStatus(sent.id)).toBe('pending');
    const ivy = await signUp(portal, { email: sent.email });
    const page = await (await ivy.client.get(sent.path)).text();
    expect(page).toContain('data-testid="invite-standing"');
    expect(page).toContain('can no longer make you org admin');
    expect(page).not.toContain('data-testid="invite-accept"');
    const refused = await reply(await ivy.client.postJson(`${sent.path}/accept`, {}));
    expectError(refused, 409, 'conflict');
    expect(refused.body.error?.human_message).toContain(
      'Whoever sent this invitation can no longer make you org admin of this organisation',
    );
    expect(await placeOf(ivy.id)).toEqual({ organisation_id: null, role: 'member' });
    expect(await inviteStatus(sent.id)).toBe('pending');

    await ownerDoes(bob.id, 'status', { status: 'active' });
    const accepted = await ivy.client.postJson(`${sent.path}/accept`, {});
    expect(accepted.status, await accepted.clone().text()).toBe(200);
    expect(await accepted.json()).toMatchObject({ ok: true, organisation_id: org, role: 'org_admin' });
  });

  it('is withdrawn when the sender is hard-deleted', async () => {
    const org = await organisation();
    const bob = await signUp(portal, { organisationId: org, role: 'org_admin' });
    const sent = await invite(bob.client, 'org_admin');
    await ownerDoes(bob.id, 'hard-delete', { confirm: 'delete' });
    expect(await inviteStatus(sent.id)).toBe('revoked');
    const ivy = await signUp(portal, { email: sent.email });
    expectError(await reply(await ivy.client.postJson(`${sent.path}/accept`, {})), 409, 'conflict');
    expect(await placeOf(ivy.id)).toEqual({ organisation_id: null, role: 'member' });
  });

  it('one still pending from before the rule (its sender demoted meanwhile) is refused at acceptance', async () => {
    const org = await organisation();
    const bob = await signUp(portal, { organisationId: org, role: 'org_admin' });
    const sent = await invite(bob.client, 'org_admin');
    // As a demotion left it before invitations were withdrawn with it.
    await knex()('users').where({ id: bob.id }).update({ role: 'member' });
    expect(await inviteStatus(sent.id)).toBe('pending');
    const ivy = await signUp(portal, { email: sent.email });
    expect(await (await ivy.client.get(sent.path)).text()).toContain('can no longer make you org admin');
    expectError(await reply(await ivy.client.postJson(`${sent.path}/accept`, {})), 409, 'conflict');
    expect(await placeOf(ivy.id)).toEqual({ organisation_id: null, role: 'member' });
  });

  it('a platform administrator’s invitation into any organisation holds while they are one, and is withdrawn once they are not', async () => {
    const org = await organisation();
    const admin = await signUp(portal, { role: 'platform_admin' });
    const kept = await invite(admin.client, 'org_admin', { org_id: org });
    const lost = await invite(admin.client, 'platform_admin', { org_id: org });
    const kai = await signUp(portal, { email: kept.email });
    const accepted = await kai.client.postJson(`${kept.path}/accept`, {});
    expect(accepted.status, await accepted.clone().text()).toBe(200);
    expect(await placeOf(kai.id)).toEqual({ organisation_id: org, role: 'org_admin' });

    // Demoted to org admin of no organisation: they may invite nowhere, so nothing they sent holds.
    await ownerDoes(admin.id, 'role', { role: 'org_admin' });
    expect(await inviteStatus(lost.id)).toBe('revoked');
    const lee = await signUp(portal, { email: lost.email });
    expectError(await reply(await lee.client.postJson(`${lost.path}/accept`, {})), 409, 'conflict');
    expect(await placeOf(lee.id)).toEqual({ organisation_id: null, role: 'member' });
  });
});
