// /dashboard/activity: sign-ins, key changes and terms accepted appear in the account's own
// activity, newest first, paged by `before`; an administrator's change to someone's key is
// marked and shown to that key's owner; nobody sees another account's activity; bad paging → 422.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PortalClient } from '../support/portal-client.js';
import { signUp } from '../support/portal-users.js';
import { startPortalHarness, type PortalHarness } from '../support/portal-harness.js';

let portal: PortalHarness;
beforeAll(async () => {
  portal = await startPortalHarness();
});
afterAll(async () => {
  await portal?.close();
});

async function signedIn(role?: string): Promise<PortalClient> {
  return (await signUp(portal, role ? { role } : {})).client;
}

interface Entry {
  id: number;
  kind: string;
  summary: string;
  by_administrator: boolean;
}
const activity = async (c: PortalClient, query = '') =>
  (await (await c.get(`/dashboard/activity${query}`, { accept: 'application/json' })).json()) as {
    data: Entry[];
    next_before: number | null;
  };

describe('account activity', () => {
  it('records sign-in, key changes and terms, newest first, and pages by before', async () => {
    const client = await signedIn();
    const created = (await (await client.postJson('/dashboard/keys/new', { name: 'ledger' })).json()) as { key: { key_id: number } };
    expect((await client.postJson(`/dashboard/keys/${created.key.key_id}`, { action: 'suspend' })).status).toBe(200);
    expect((await client.postJson('/api/legal/accept', {})).status).toBe(200);

    const all = await activity(client);
    expect(all.data.map((e) => e.kind)).toEqual(['terms_accepted', 'key_suspended', 'key_created', 'signed_in']);
    expect(all.data[2]!.summary).toBe('Created key “ledger”');
    expect(all.data.every((e) => !e.by_administrator)).toBe(true);

    const first = await activity(client, '?limit=2');
    expect(first.data.map((e) => e.kind)).toEqual(['terms_accepted', 'key_suspended']);
    const second = await activity(client, `?limit=2&before=${first.next_before!}`);
    expect(second.data.map((e) => e.kind)).toEqual(['key_created', 'signed_in']);
    expect(second.next_before).toBeNull();

    const html = await (await client.get('/dashboard/activity')).text();
    expect(html).toContain('Created key “ledger”');
  });

  it('shows an administrator’s change on the owner’s activity, marked, and keeps accounts apart', async () => {
    const owner = await signedIn();
    const admin = await signedIn('platform_admin');
    const created = (await (await owner.postJson('/dashboard/keys/new', { name: 'shared' })).json()) as { key: { key_id: number } };
    expect((await admin.postJson(`/dashboard/keys/${created.key.key_id}`, { action: 'revoke' })).status).toBe(200);
    const revoked = (await activity(owner)).data[0]!;
    expect(revoked).toMatchObject({ kind: 'key_revoked', by_administrator: true });
    expect(revoked.summary).toContain('by an administrator');
    // The administrator's own activity holds their sign-in only, never the owner's rows.
    expect((await activity(admin)).data.map((e) => e.kind)).toEqual(['signed_in']);
  });

  it('answers 422 for bad paging and sends signed-out browsers to sign in', async () => {
    const client = await signedIn();
    for (const q of ['?before=0', '?before=abc', '?limit=0', '?limit=101', '?other=1'])
      expect((await client.get(`/dashboard/activity${q}`, { accept: 'application/json' })).status, q).toBe(422);
    const anonymous = await new PortalClient(portal.url).get('/dashboard/activity');
    expect(anonymous.status).toBe(303);
  });
});
