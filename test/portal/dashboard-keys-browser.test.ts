// The key pages in a real browser (Chromium through playwright-core), with a gateway sharing the
// portal's database and store: sign in, create a key from the form, call the gateway with the
// shown secret through the official openai SDK, revoke it from its page and see the gateway
// refuse it. Screenshots of the key pages go to .data/artifacts/portal/.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, screenshot } from '../support/browser.js';
import type { PortalHarness } from '../support/portal-harness.js';
import type { GatewayHarness } from '../support/gateway-harness.js';
import { fundWallet, signUp, startPortalWithGateway } from '../support/portal-users.js';
import { waitFor } from '../support/wait-for.js';

let world: Awaited<ReturnType<typeof startPortalWithGateway>>;
let portal: PortalHarness;
let gateway: GatewayHarness;
let browser: Browser;
beforeAll(async () => {
  world = await startPortalWithGateway();
  ({ portal, gateway } = world);
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await world?.close();
});

/** Signs in through the login form and lands on `path`, where the form sends the person back. */
async function signIn(page: Page, email: string, password: string, path: string): Promise<void> {
  await page.goto(`/login?return_to=${encodeURIComponent(path)}`);
  await page.fill('#email', email);
  await page.fill('#password', password);
  await page.click('form[action="/auth/login"] button[type=submit]');
  await page.waitForURL(`**${path}`);
}

const chat = (secret: string) =>
  new OpenAI({ baseURL: `${gateway.gateway.url}/v1`, apiKey: secret, maxRetries: 0 }).chat.completions.create({
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'hello from the browser test' }],
    max_tokens: 5,
  });

describe('keys in the browser', () => {
  it('creates a key, uses it through the SDK, revokes it, and the gateway refuses it', async () => {
    const { email, password, id } = await signUp(portal, { name: 'Kim Keys', password: 'browser password 42' });
    // The key is paid from the user's wallet: fund it as a platform administrator would.
    await fundWallet(gateway, `user:${id}`, 5);

    const context = await browser.newContext({ baseURL: portal.url, viewport: { width: 1280, height: 900 } });
    try {
      const page = await context.newPage();
      await signIn(page, email, password, '/dashboard/keys');
      expect(await page.textContent('.empty')).toContain('No keys yet');

      await page.click('a[href="/dashboard/keys/new"] >> nth=0');
      await page.waitForURL('**/dashboard/keys/new');
      await page.fill('#name', 'browser service');
      await page.fill('#allowed_models', 'gpt-4o-mini');
      await page.fill('#budget_limit', '3');
      await page.selectOption('#budget_period', 'daily');
      await page.fill('#rate_limit_rpm', '60');
      await screenshot(page, 'key-new');
      await page.click('form[action="/dashboard/keys/new"] button[type=submit]');
      await page.waitForSelector('[data-testid=key-secret]');
      const secret = await page.inputValue('[data-testid=key-secret]');
      expect(secret).toMatch(/^svc-sk-/);
      await screenshot(page, 'key-created');

      const reply = await chat(secret);
      expect(reply.choices[0]?.message.content).toBeTruthy();

      await page.click('a:has-text("Key details")');
      await page.waitForURL(/\/dashboard\/keys\/\d+$/);
      expect(await page.textContent('h1')).toBe('browser service');
      expect(await page.inputValue('#budget_limit')).toBe('3');
      // The spend of the call shows on the key's page (reserved then settled: above zero).
      await waitFor('the call to count against the budget', async () => {
        await page.reload();
        const spent = (await page.textContent('.grid-3 .card .stat'))!.trim();
        return spent.startsWith('$') && Number(spent.slice(1)) > 0;
      });
      await screenshot(page, 'key-detail');

      // Revoking takes a second, deliberate click.
      await page.click('summary:has-text("Revoke key")');
      await page.click('button:has-text("Revoke key permanently")');
      await page.waitForURL(/notice=revoked/);
      expect(await page.textContent('.alert-ok')).toContain('Key revoked');
      await waitFor(
        'the gateway to refuse the revoked key',
        () =>
          chat(secret).then(
            () => false,
            (e: unknown) => e instanceof OpenAI.APIError && e.status === 401,
          ),
        2_000,
      );
      await page.goto('/dashboard/keys');
      expect(await page.textContent('table')).toContain('revoked');
      await screenshot(page, 'key-list');
    } finally {
      await context.close();
    }
  });

  it('a double click on "Create key" makes one key and shows its secret', async () => {
    const { email, password } = await signUp(portal, { name: 'Dee Double', password: 'browser password 42' });
    const context = await browser.newContext({ baseURL: portal.url, viewport: { width: 1280, height: 900 } });
    try {
      const page = await context.newPage();
      await signIn(page, email, password, '/dashboard/keys/new');
      await page.fill('#name', 'double clicked');
      // Without the page's guard the browser sends both, shows the answer to the second (the
      // server's "this form was already sent" redirect), and the first key's secret is never seen.
      // The second click comes while the first request is on its way, as a person's would: the
      // POST is held until then (two clicks in one task would be merged by the browser anyway).
      const button = page.locator('form[action="/dashboard/keys/new"] button[type=submit]');
      const posts: string[] = [];
      page.on('request', (r) => {
        if (r.method() === 'POST') posts.push(r.url());
      });
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      await page.route('**/dashboard/keys/new', async (route) => {
        if (route.request().method() === 'POST') await held;
        await route.continue().catch(() => undefined); // a cancelled submission has nothing to continue
      });
      // The mouse, not the locator: a locator waits for the navigation the first click began.
      const box = (await button.boundingBox())!;
      const sent = page.waitForRequest((r) => r.method() === 'POST');
      await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
      await sent;
      await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
      release();
      await page.waitForSelector('[data-testid=key-secret]');
      expect(await page.inputValue('[data-testid=key-secret]')).toMatch(/^svc-sk-/);
      expect(posts).toHaveLength(1);
      await page.goto('/dashboard/keys');
      expect(await page.locator('table tbody tr').count()).toBe(1);
    } finally {
      await context.close();
    }
  });

  it("'Skip to content' skips the dashboard menu: the next Tab reaches the page's own first link", async () => {
    const { email, password } = await signUp(portal, { password: 'browser password 42' });
    const context = await browser.newContext({ baseURL: portal.url, viewport: { width: 1280, height: 900 } });
    try {
      const page = await context.newPage();
      await signIn(page, email, password, '/dashboard/keys');
      await page.keyboard.press('Tab');
      expect(await page.evaluate('document.activeElement.textContent.trim()')).toBe('Skip to content');
      await page.keyboard.press('Enter');
      await page.keyboard.press('Tab');
      const focused = (await page.evaluate(`(() => {
        const el = document.activeElement;
        return { text: el.textContent.trim(), inMenu: el.closest('.side-nav') !== null, inHeader: el.closest('.site-header') !== null };
      })()`)) as { text: string; inMenu: boolean; inHeader: boolean };
      expect(focused).toMatchObject({ inMenu: false, inHeader: false });
      expect(focused.text).toBe('New key');
      // The overview too (its route names its menu section).
      await page.goto('/dashboard');
      await page.keyboard.press('Tab');
      await page.keyboard.press('Enter');
      await page.keyboard.press('Tab');
      expect(await page.evaluate(`document.activeElement.closest('.side-nav, .site-header') === null`)).toBe(true);
    } finally {
      await context.close();
    }
  });

  it('names as long as the forms accept, without a space, wrap instead of widening the page', async () => {
    // An administrator, so the users list (where the name is a link in a table) is seen too.
    const { email, password } = await signUp(portal, { name: 'W'.repeat(120), password: 'browser password 42', role: 'platform_admin' });
    const context = await browser.newContext({ baseURL: portal.url, viewport: { width: 1280, height: 900 } });
    try {
      const page = await context.newPage();
      await signIn(page, email, password, '/dashboard/keys/new');
      await page.fill('#name', 'K'.repeat(200));
      await page.click('form[action="/dashboard/keys/new"] button[type=submit]');
      await page.waitForSelector('[data-testid=key-secret]');
      for (const path of ['/dashboard', '/dashboard/keys', '/dashboard/activity', '/dashboard/admin/users']) {
        await page.goto(path);
        const width = await page.evaluate('document.documentElement.scrollWidth');
        expect(width, path).toBeLessThanOrEqual(1280);
        // Nor does a table outgrow its card because of the name (the card would scroll the other
        // columns out of sight). The users list may scroll for its emails; there the name's column
        // must stay narrow.
        if (path === '/dashboard/admin/users') {
          const nameCell = await page.evaluate(
            `document.querySelector('[data-testid=users-table] td a[href^="/dashboard/admin/users/"]').closest('td').getBoundingClientRect().width`,
          );
          expect(nameCell, path).toBeLessThan(400);
        } else {
          const overflowing = await page.evaluate(
            `[...document.querySelectorAll('.card:has(> .table)')].filter((c) => c.scrollWidth > c.clientWidth + 1).length`,
          );
          expect(overflowing, path).toBe(0);
        }
      }
      await screenshot(page, 'key-list-long-names');

      // Administration tables: an organisation or department name as long as its form takes, without
      // a space, wraps; and a plain name beside an email keeps a readable column ("Othe/r Perso/n" was seen).
      const knex = portal.database.knex;
      const [org] = (await knex('organisations')
        .insert({ name: `Organisation ${'Ü'.repeat(120)}`, slug: `long-${Date.now()}` })
        .returning('id')) as { id: number }[];
      await knex('departments').insert({ organisation_id: org!.id, name: `Department ${'D'.repeat(100)}` });
      await signUp(portal, { name: 'Other Person', password: 'browser password 42', organisationId: org!.id });
      for (const path of ['/dashboard/admin/organisations', '/dashboard/admin/departments']) {
        await page.goto(path);
        const overflowing = await page.evaluate(
          `[...document.querySelectorAll('.card:has(> .table)')].filter((c) => c.scrollWidth > c.clientWidth + 1).length`,
        );
        expect(overflowing, path).toBe(0);
        await screenshot(page, `admin${path.replaceAll('/', '-').replace('-dashboard-admin', '')}-long-names`);
      }
      await page.goto('/dashboard/admin/users');
      const lines = await page.evaluate(`(() => {
        const link = [...document.querySelectorAll('[data-testid=users-table] td a')].find((a) => a.textContent.trim() === 'Other Person');
        const range = document.createRange();
        range.selectNodeContents(link);
        return new Set([...range.getClientRects()].map((box) => Math.round(box.top))).size;
      })()`);
      expect(lines, 'the lines "Other Person" takes in the users list').toBeLessThanOrEqual(1);
    } finally {
      await context.close();
    }
  });
});
