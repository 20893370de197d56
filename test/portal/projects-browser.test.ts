// Projects in a real browser (Chromium through playwright-core): a department admin creates a
// project from the form, adds a colleague, issues a token and sees its secret once; the secret
// works at the gateway and is paid by the project's wallet; the administrators' read-only view
// lists the project. Each step is seen on screen.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import type { Browser } from 'playwright-core';
import { launchChromium, screenshot, signInPage } from '../support/browser.js';
import { fundWallet, signUp, startPortalWithGateway } from '../support/portal-users.js';

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

describe('projects in the browser', () => {
  it('create a project, add a member, issue a token that the project pays for, see it in the admin view', async () => {
    const knex = world.portal.database.knex;
    const [org] = (await knex('organisations')
      .insert({ name: 'Browser Projects Org', slug: `browser-projects-${Date.now()}` })
      .returning('id')) as { id: number }[];
    const [dept] = (await knex('departments').insert({ organisation_id: org!.id, name: 'Search' }).returning('id')) as { id: number }[];
    const admin = await signUp(world.portal, {
      organisationId: org!.id,
      departmentId: dept!.id,
      role: 'department_admin',
      name: 'Dana Lead',
      password: 'browser password 44',
    });
    const colleague = await signUp(world.portal, { organisationId: org!.id, departmentId: dept!.id, name: 'Cole League' });

    const signedIn = await signInPage(browser, world.portal.url, admin, '/dashboard/projects');
    try {
      const page = signedIn.page;
      expect(await page.textContent('main')).toContain('You are not in any project yet');
      await page.fill('[data-testid=project-create] #name', 'Relevance tuning');
      await page.fill('[data-testid=project-create] #description', 'Ranking experiments for search');
      await page.click('[data-testid=project-create] button');
      await page.waitForURL(/\/dashboard\/projects\/\d+$/);
      const projectId = Number(new URL(page.url()).pathname.split('/').pop());
      expect(await page.textContent('h1')).toBe('Relevance tuning');

      await page.fill('[data-testid=project-member-add] #email', colleague.email);
      await page.click('[data-testid=project-member-add] button');
      await page.waitForURL(/notice=member/);
      expect(await page.textContent('[data-testid=project-members]')).toContain(colleague.email);

      await page.fill('[data-testid=project-token-create] #token-name', 'ranker');
      await page.click('[data-testid=project-token-create] button');
      await page.waitForSelector('[data-testid=token-created]');
      const secret = await page.inputValue('[data-testid=token-secret]');
      expect(secret.startsWith('svc_')).toBe(true);
      await screenshot(page, 'project-token-created');

      await fundWallet(world.gateway, `project:${projectId}`, 2);
      const sdk = new OpenAI({ baseURL: `${world.gateway.gateway.url}/v1`, apiKey: secret, maxRetries: 0 });
      const answer = await sdk.chat.completions.create({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'rank' }],
        max_tokens: 5,
      });
      expect(answer.choices[0]!.message.content).toBeTruthy();

      // Reloaded, the page shows the token, never its secret again.
      await page.goto(`/dashboard/projects/${projectId}`);
      expect(await page.textContent('[data-testid=project-tokens]')).toContain('ranker');
      expect(await page.content()).not.toContain(secret);
      expect(await page.textContent('[data-testid=project-balance]')).toMatch(/^\$[0-9]+\.[0-9]{2,9}$/);

      await page.goto('/dashboard/admin/projects');
      const row = page.locator(`[data-testid=admin-projects-table] tr[data-project-id="${projectId}"]`);
      expect(await row.textContent()).toContain('Relevance tuning');
      expect(await row.textContent()).toContain(admin.email);
      await screenshot(page, 'admin-projects');
      expect(signedIn.problems).toEqual([]);
    } finally {
      await signedIn.close();
    }
  });
});
