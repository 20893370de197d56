// The dashboard's wide tables on a laptop's screen (1280 × 800, Chromium through playwright-core):
// each fits its card, with no sideways scrolling. An outside probe found 925 px of users table in
// an 834 px card (the "Since" column cut to "2026-1"), the request log's "Latency" column and
// 1,059 px of projects table out of sight. Screenshots go to .data/artifacts/portal/.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import type { Browser } from 'playwright-core';
import { launchChromium, screenshot, signInPage } from '../support/browser.js';
import { fundWallet, signUp, startPortalWithGateway } from '../support/portal-users.js';
import { waitFor } from '../support/wait-for.js';

let world: Awaited<ReturnType<typeof startPortalWithGateway>>;
let browser: Browser;
beforeAll(async () => {
  world = await startPortalWithGateway();
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await world?.close();
});

describe('the dashboard on a 1280 px screen', () => {
  it('fits the users, projects and request-log tables in their cards', async () => {
    const knex = world.portal.database.knex;
    const [org] = (await knex('organisations')
      .insert({ name: 'Konstantinopoulou Research and Development Laboratories', slug: `desktop-${Date.now()}` })
      .returning('id')) as { id: number }[];
    const [department] = (await knex('departments')
      .insert({ organisation_id: org!.id, name: 'Applied Machine Learning Infrastructure' })
      .returning('id')) as { id: number }[];
    const admin = await signUp(world.portal, {
      role: 'platform_admin',
      organisationId: org!.id,
      departmentId: department!.id,
      name: 'Alexandra Konstantinopoulou-Smithson',
      email: `a.konstantinopoulou-${Date.now()}@example.com`,
      password: 'desktop layout password 42',
    });
    await signUp(world.portal, {
      organisationId: org!.id,
      departmentId: department!.id,
      role: 'org_admin',
      name: 'Bartholomew Featherstonehaugh',
    });
    await signUp(world.portal, { name: 'Chidimma Okonkwo-Adeyemi' });
    const created = await admin.client.postJson('/dashboard/projects', {
      name: 'Relevance tuning for multilingual search',
      description: 'Ranking experiments for the search team across twelve languages',
      department_id: department!.id,
    });
    expect(created.status, await created.clone().text()).toBe(201);

    await fundWallet(world.gateway, `user:${admin.id}`, 5);
    const { secret } = (await (await admin.client.postJson('/dashboard/keys/new', { name: 'laptop integration tests' })).json()) as {
      secret: string;
    };
    const openai = new OpenAI({ baseURL: `${world.gateway.gateway.url}/v1`, apiKey: secret, maxRetries: 0 });
    for (let i = 0; i < 3; i++)
      await openai.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 });
    await waitFor('the requests in the request log', async () => {
      const log = (await (await admin.client.get('/dashboard/request-log', { accept: 'application/json' })).json()) as { data: unknown[] };
      return log.data.length === 3;
    });

    const signedIn = await signInPage(browser, world.portal.url, admin, '/dashboard');
    try {
      const { page } = signedIn;
      await page.setViewportSize({ width: 1280, height: 800 });
      const overflowing: Record<string, { table: number; card: number }> = {};
      for (const [path, table] of [
        ['/dashboard/admin/users', 'users-table'],
        ['/dashboard/admin/projects', 'admin-projects-table'],
        ['/dashboard/request-log', 'log-table'],
      ] as const) {
        const response = await page.goto(path);
        expect(response?.status(), path).toBe(200);
        await page.waitForSelector(`[data-testid=${table}] tbody tr`);
        // The table's content against the room its card (its scrolling container) gives it: the
        // card's own scroll width counts its padding too, so a table 1 px past the content box shows.
        const sizes = (await page.evaluate(`(() => {
          const table = document.querySelector('[data-testid=${table}]');
          const card = table.parentElement;
          return { table: table.scrollWidth, card: card.clientWidth, cardScrolls: card.scrollWidth > card.clientWidth };
        })()`)) as { table: number; card: number; cardScrolls: boolean };
        if (sizes.table > sizes.card || sizes.cardScrolls) overflowing[path] = { table: sizes.table, card: sizes.card };
        await screenshot(page, `desktop${path.replaceAll('/', '-')}`);
      }
      expect(overflowing).toEqual({});
      expect(signedIn.problems).toEqual([]);
    } finally {
      await signedIn.close();
    }
  });
});
