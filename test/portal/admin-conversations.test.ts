// Conversations against a real gateway sharing the portal's database and store: requests sent
// with a session id through the official SDK group into a conversation an organisation's admin
// can list and open (metadata only), scoped by organisation; deleting it unlinks its requests
// while their billing rows stay; and the page deletes through its button in a real browser.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import type { Browser } from 'playwright-core';
import { launchChromium, screenshot, signInPage } from '../support/browser.js';
import type { PortalHarness } from '../support/portal-harness.js';
import type { GatewayHarness } from '../support/gateway-harness.js';
import { fundWallet, signUp, startPortalWithGateway, type SignedInUser } from '../support/portal-users.js';
import { waitFor } from '../support/wait-for.js';

let world: Awaited<ReturnType<typeof startPortalWithGateway>>;
let portal: PortalHarness;
let gateway: GatewayHarness;
let browser: Browser;
let admin: SignedInUser;
let outsider: SignedInUser;
let member: SignedInUser;
let sdk: OpenAI;

const say = (session: string, text: string) =>
  sdk.chat.completions.create(
    { model: 'gpt-4o-mini', messages: [{ role: 'user', content: text }], max_tokens: 5 },
    { headers: { 'x-session-id': session } },
  );

beforeAll(async () => {
  world = await startPortalWithGateway();
  ({ portal, gateway } = world);
  browser = await launchChromium();
  const [org] = (await portal.database
    .knex('organisations')
    .insert({ name: 'Chat Org', slug: `chat-${Date.now()}` })
    .returning('id')) as { id: number }[];
  admin = await signUp(portal, { organisationId: org!.id, role: 'org_admin', password: 'browser password 45' });
  outsider = await signUp(portal, { role: 'org_admin' });
  member = await signUp(portal, { organisationId: org!.id });
  await fundWallet(gateway, `user:${member.id}`, 5);
  const { secret } = (await (await member.client.postJson('/dashboard/keys/new', { name: 'chat key' })).json()) as { secret: string };
  sdk = new OpenAI({ baseURL: `${gateway.gateway.url}/v1`, apiKey: secret, maxRetries: 0 });
});
afterAll(async () => {
  await browser?.close();
  await world?.close();
});

describe('conversations', () => {
  it('groups a session’s requests, shows them in scope, and deletes the conversation but not the billing rows', async () => {
    const session = `support-chat/${Date.now()} ünï`;
    await say(session, 'first');
    await say(session, 'second');
    await say('other-session', 'elsewhere');
    await waitFor('three audited requests', async () => {
      const [row] = await portal.database.knex('audit_log').whereNotNull('session').count({ n: '*' });
      return Number((row as { n: string }).n) === 3;
    });
    const list = async (client: SignedInUser['client'], query = '') =>
      (await (await client.get(`/dashboard/admin/conversations${query}`, { accept: 'application/json' })).json()) as {
        data: { conversation_id: string; requests: number; models: string[]; cost_usd: number }[];
      };
    const mine = await list(admin.client);
    expect(mine.data.map((c) => c.conversation_id).sort()).toEqual(['other-session', session].sort());
    expect(mine.data.find((c) => c.conversation_id === session)).toMatchObject({ requests: 2, models: ['gpt-4o-mini'] });
    expect((await list(admin.client, `?q=${encodeURIComponent('SUPPORT')}`)).data.map((c) => c.conversation_id)).toEqual([session]);
    expect((await list(outsider.client)).data).toEqual([]);
    expect((await member.client.get('/dashboard/admin/conversations', { accept: 'application/json' })).status).toBe(403);
    for (const query of ['?days=0', '?limit=500', '?before=yesterday'])
      expect((await admin.client.get(`/dashboard/admin/conversations${query}`, { accept: 'application/json' })).status).toBe(422);

    const path = `/dashboard/admin/conversations/${encodeURIComponent(session)}`;
    const detail = (await (await admin.client.get(path, { accept: 'application/json' })).json()) as {
      requests: { status: number; ts: string }[];
    };
    expect(detail.requests).toHaveLength(2);
    expect(detail.requests[0]!.ts <= detail.requests[1]!.ts).toBe(true);
    expect((await outsider.client.get(path, { accept: 'application/json' })).status).toBe(404);
    expect(
      (
        await outsider.client.request('DELETE', `/api/admin/conversations/${encodeURIComponent(session)}`, {
          headers: { accept: 'application/json' },
        })
      ).status,
    ).toBe(404);

    const rowsBefore = await portal.database.knex('audit_log').count({ n: '*' });
    const session2 = 'browser-deleted';
    await say(session2, 'to be deleted');
    await waitFor('the browser session audited', async () =>
      Boolean(await portal.database.knex('audit_log').where({ session: session2 }).first()),
    );
    const deleted = await admin.client.request('DELETE', `/api/admin/conversations/${encodeURIComponent(session)}`, {
      headers: { accept: 'application/json' },
    });
    expect(deleted.status).toBe(200);
    expect(await deleted.json()).toMatchObject({ ok: true, requests_unlinked: 2 });
    expect((await admin.client.get(path, { accept: 'application/json' })).status).toBe(404);
    const [after] = await portal.database.knex('audit_log').count({ n: '*' });
    expect(Number((after as { n: string }).n)).toBe(Number((rowsBefore[0] as { n: string }).n) + 1);

    // In the browser: open the conversation and delete it with its button.
    const page = await signInPage(browser, portal.url, admin, '/dashboard/admin/conversations');
    try {
      await page.page.click(`a[href="/dashboard/admin/conversations/${session2}"]`);
      await page.page.waitForSelector('[data-testid=conversation-requests]');
      await screenshot(page.page, 'admin-conversation');
      // A deliberate second click: the delete button shows inside its confirmation.
      await page.page.click('[data-testid=conversation-delete-open]');
      await page.page.click('[data-testid=conversation-delete]');
      await page.page.waitForURL('**/dashboard/admin/conversations?deleted=1');
      expect(await page.page.locator(`a[href="/dashboard/admin/conversations/${session2}"]`).count()).toBe(0);
      expect(page.problems).toEqual([]);
    } finally {
      await page.close();
    }
  });
});
