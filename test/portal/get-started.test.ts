// The get-started checklist ticks its steps from the data (funds, a key, a first request through
// the gateway), keeps the hand-ticked ones, hides from the overview and comes back; and the guide
// shows the caller's gateway URL.
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

interface Checklist {
  hidden: boolean;
  done: number;
  steps: { id: string; done: boolean }[];
}

describe('get started', () => {
  it('ticks steps when they really happen, keeps manual ticks, hides and resumes', async () => {
    const { client, id } = await signUp(portal, { name: 'Nina New' });
    const state = async () => (await (await client.get('/dashboard/get-started', { accept: 'application/json' })).json()) as Checklist;
    const done = async () => Object.fromEntries((await state()).steps.map((s) => [s.id, s.done]));

    expect(await done()).toEqual({
      verify_email: true,
      fund_wallet: false,
      create_key: false,
      first_request: false,
      read_guide: false,
      explore_usage: false,
    });
    await fundWallet(gateway, `user:${id}`, 2);
    const { secret } = (await (await client.postJson('/dashboard/keys/new', { name: 'first' })).json()) as { secret: string };
    expect(await done()).toMatchObject({ fund_wallet: true, create_key: true, first_request: false });
    // Before the first request the overview shows how to make one, with the catalogue's first chat model.
    const before = await (await client.get('/dashboard')).text();
    expect(before).toContain('Make your first call');
    expect(before).toContain(`model: 'claude-haiku-4-5'`);
    expect(before).not.toContain('data-testid="overview-recent"');
    await new OpenAI({ baseURL: `${gateway.gateway.url}/v1`, apiKey: secret, maxRetries: 0 }).chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 3,
    });
    await waitFor('the first request to tick', async () => (await done()).first_request === true);

    expect((await client.postJson('/dashboard/get-started/action', { action: 'tick', step: 'read_guide' })).status).toBe(200);
    expect((await done()).read_guide).toBe(true);
    for (const bad of [{ action: 'tick', step: 'create_key' }, { action: 'explode' }, { action: 'tick' }, {}])
      expect((await client.postJson('/dashboard/get-started/action', bad)).status, JSON.stringify(bad)).toBe(422);
    expect((await client.postJson('/dashboard/get-started/hide', { action: 'reset' })).status).toBe(422);

    // The addresses of the portal's page table: …/hide, …/resume, …/reset, as forms and as JSON.
    const overview = await (await client.get('/dashboard')).text();
    expect(overview).toContain('data-testid="overview-checklist"');
    // Each SDK's own base URL: the Anthropic SDK adds /v1 itself (/v1/v1/messages is a 404).
    const baseUrl = (testid: string) => new RegExp(`data-testid="${testid}">([^<]+)<`).exec(overview)?.[1];
    expect(baseUrl('base-url-openai')).toMatch(/\/v1$/);
    expect(baseUrl('base-url-anthropic')).toBe(baseUrl('base-url-openai')!.replace(/\/v1$/, ''));
    // After it, the last 30 days instead, counted as the usage page counts them.
    expect(overview).not.toContain('Make your first call');
    const recent = /data-testid="overview-recent">([\s\S]*?)<\/section>/.exec(overview)?.[1] ?? '';
    expect(recent).toMatch(/Requests<\/p><p class="stat">1<\/p>/);
    expect(recent).toMatch(/Spend<\/p><p class="stat">\$0\.\d+<\/p>/);
    const hidden = await client.postForm('/dashboard/get-started/hide', {});
    expect([hidden.status, hidden.headers.get('location')]).toEqual([303, '/dashboard']);
    expect((await state()).hidden).toBe(true);
    expect(await (await client.get('/dashboard')).text()).not.toContain('data-testid="overview-checklist"');
    expect(((await (await client.postJson('/dashboard/get-started/resume', {})).json()) as Checklist).hidden).toBe(false);
    expect((await state()).hidden).toBe(false);
    expect((await client.request('POST', '/dashboard/get-started/reset')).status).toBe(303);
    expect(await done()).toMatchObject({ read_guide: false, create_key: true });
    // The first address, kept for forms already out there.
    expect((await client.postJson('/dashboard/get-started', { action: 'tick', step: 'explore_usage' })).status).toBe(200);
    expect((await done()).explore_usage).toBe(true);

    const guide = await (await client.get('/dashboard/guide')).text();
    expect(guide).toContain('/v1');
    // The first chat model of the catalogue (the demo's: claude-haiku-4-5, served to the OpenAI SDK through translation).
    expect(guide).toContain("model: 'claude-haiku-4-5'");
  });
});
