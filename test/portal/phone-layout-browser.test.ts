// The dashboard on a phone (390 × 844, Chromium through playwright-core), with real usage and a
// request-log report in it: no page is wider than the screen — wide tables, code blocks and the
// section menu scroll inside the page instead of widening it (an outside probe found the overview
// at 899 px and the guide at 1,176 px on a 390 px screen). Screenshots go to .data/artifacts/portal/.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, screenshot } from '../support/browser.js';
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

describe('the dashboard on a phone', () => {
  it('no page is wider than a 390 px screen, wide tables scroll inside it, and badges, amounts and dates stay on one line', async () => {
    const user = await signUp(world.portal, { password: 'phone layout password 42', name: 'Alexandra Konstantinopoulou-Smithson' });
    await fundWallet(world.gateway, `user:${user.id}`, 5);
    const { secret } = (await (await user.client.postJson('/dashboard/keys/new', { name: 'phone' })).json()) as { secret: string };
    const openai = new OpenAI({ baseURL: `${world.gateway.gateway.url}/v1`, apiKey: secret, maxRetries: 0 });
    for (let i = 0; i < 3; i++)
      await openai.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 });
    await waitFor('the requests in the request log', async () => {
      const log = (await (await user.client.get('/dashboard/request-log', { accept: 'application/json' })).json()) as { data: unknown[] };
      return log.data.length === 3;
    });
    const report = (await (await user.client.postJson('/dashboard/reports', { name: 'All requests', kind: 'request_log' })).json()) as {
      report: { id: number };
    };

    const context = await browser.newContext({ baseURL: world.portal.url, viewport: { width: 390, height: 844 }, isMobile: true });
    try {
      const page = await context.newPage();
      await page.goto('/login');
      await page.fill('#email', user.email);
      await page.fill('#password', user.password);
      await page.click('form[action="/auth/login"] button[type=submit]');
      await page.waitForURL('**/dashboard**');
      const paths = [
        '/dashboard',
        '/dashboard/guide',
        '/dashboard/models',
        '/dashboard/models/gpt-4o-mini',
        '/dashboard/request-log',
        '/dashboard/usage',
        '/dashboard/autorouter',
        '/dashboard/budgets',
        '/dashboard/reports',
        `/dashboard/reports/${report.report.id}/view`,
        '/dashboard/keys',
        '/dashboard/billing',
      ];
      const widths: Record<string, number> = {};
      const broken: string[] = [];
      const menuHidesCurrent: string[] = [];
      for (const path of paths) {
        const response = await page.goto(path);
        expect(response?.status(), path).toBe(200);
        widths[path] = (await page.evaluate('document.documentElement.scrollWidth')) as number;
        // The menu row starts scrolled to the page shown (side-nav.js): its link is in view.
        await page.waitForLoadState('load');
        const inView = await page.evaluate(`(() => {
          const nav = document.querySelector('.side-nav');
          const current = nav && nav.querySelector('[aria-current="page"]');
          if (!current) return true;
          const n = nav.getBoundingClientRect(), c = current.getBoundingClientRect();
          return c.left >= n.left - 1 && c.right <= n.right + 1;
        })()`);
        if (!inView) menuHidesCurrent.push(path);
        // A badge, an amount or a date in a table is one line, never "activ/e" or "$0.00/001".
        broken.push(...(await brokenTokens(page, path)));
        await screenshot(page, `phone${path.replaceAll('/', '-')}`);
      }
      // The header: the site's links on one row (they wrapped into three against the top edge),
      // and "Sign out" inside the page's margin beside a long name (it touched the screen's edge).
      await page.goto('/dashboard');
      const header = (await page.evaluate(`(() => {
        const tops = new Set([...document.querySelectorAll('.main-nav a')].map((a) => Math.round(a.getBoundingClientRect().top)));
        const button = document.querySelector('.account-nav a[href="/logout"]');
        const signOut = button.getBoundingClientRect();
        return { navRows: tops.size, signOutRight: Math.round(signOut.right), signOutWhole: button.scrollWidth <= button.clientWidth };
      })()`)) as { navRows: number; signOutRight: number; signOutWhole: boolean };
      expect(header).toEqual({ navRows: 1, signOutRight: expect.any(Number), signOutWhole: true });
      expect(header.signOutRight).toBeLessThanOrEqual(390 - 16);
      await screenshot(page, 'phone-header');
      // And on a laptop's screen, where the table has more columns than room.
      await page.setViewportSize({ width: 1280, height: 800 });
      for (const path of ['/dashboard/request-log', '/dashboard/models', '/dashboard/usage', '/dashboard/keys']) {
        await page.goto(path);
        broken.push(...(await brokenTokens(page, `${path} (1280 px)`)));
      }
      expect(Object.entries(widths).filter(([, width]) => width > 390)).toEqual([]);
      expect(broken).toEqual([]);
      expect(menuHidesCurrent).toEqual([]);
    } finally {
      await context.close();
    }
  });
});

/** The badges, amounts and dates of the page's tables that are laid out on more than one line. */
async function brokenTokens(page: Page, where: string): Promise<string[]> {
  // A string, as the project's types have no DOM: it runs in the page.
  return (await page.evaluate(`[...document.querySelectorAll('.table .status, .table .tag, .table .num, .table .nowrap')]
    .filter((el) => {
      const range = document.createRange();
      range.selectNodeContents(el);
      return new Set([...range.getClientRects()].map((box) => Math.round(box.top))).size > 1;
    })
    .map((el) => ${JSON.stringify(where)} + ': ' + el.textContent.trim())`)) as string[];
}
