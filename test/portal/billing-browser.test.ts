// A top-up in a real browser (Chromium through playwright-core): a signed-in user whose key the
// gateway refuses with billing_limit_reached opens /dashboard/billing, chooses an amount, sees the
// fee before leaving, pays on the hosted page of the processor double, lands on the confirmation
// with the new balance once the signed webhook has credited the wallet, and the same key is then
// served through the official openai SDK.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import type { Browser } from 'playwright-core';
import { launchChromium, screenshot, signInPage } from '../support/browser.js';
import { signUp } from '../support/portal-users.js';
import { waitFor } from '../support/wait-for.js';
import { ledgerNano, startBillingWorld, type BillingWorld } from './billing-helpers.js';

let world: BillingWorld;
let browser: Browser;
beforeAll(async () => {
  world = await startBillingWorld({ gateway: true });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await world?.close();
});

const chat = (secret: string) =>
  new OpenAI({ baseURL: `${world.gateway!.gateway.url}/v1`, apiKey: secret, maxRetries: 0 }).chat.completions.create({
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'paid for by card' }],
    max_tokens: 5,
  });

describe('billing in the browser', () => {
  it('tops up through the hosted page, shows the new balance, and the refused key is served', async () => {
    const { client, email, password } = await signUp(world.portal, { name: 'Pat Payer', password: 'browser password 42' });
    const created = (await (await client.postJson('/dashboard/keys/new', { name: 'paid service' })).json()) as { secret: string };
    const refused = await chat(created.secret).catch((e: unknown) => e);
    expect((refused as InstanceType<typeof OpenAI.APIError>).code).toBe('billing_limit_reached');

    const context = await browser.newContext({ baseURL: world.portal.url, viewport: { width: 1280, height: 900 } });
    try {
      const page = await context.newPage();
      await page.goto('/login?return_to=%2Fdashboard%2Fbilling');
      await page.fill('#email', email);
      await page.fill('#password', password);
      await page.click('form[action="/auth/login"] button[type=submit]');
      await page.waitForURL('**/dashboard/billing');
      await screenshot(page, 'billing-overview-empty');

      await page.click('a[href="/dashboard/billing/fund"] >> nth=0');
      await page.waitForURL('**/dashboard/billing/fund');
      await page.fill('#amount', '20');
      await page.click('form[action="/dashboard/billing/fund"][method="get"] button[type=submit]');
      // The quote shows the fee before the payer leaves the portal: (20 + 0.30) / 0.971 = 20.91.
      await page.waitForSelector('text=$20.91');
      await screenshot(page, 'billing-fund-quote');
      await page.click('form[action="/dashboard/billing/fund"][method="post"] button[type=submit]');

      // The processor's hosted page, on its own origin.
      await page.waitForURL(`${world.double.url}/pay/**`);
      expect(await page.textContent('button[type=submit]')).toContain('$20.91');
      await page.click('button[type=submit]');

      // Back on the portal: the confirmation refreshes itself until the signed event has arrived.
      await page.waitForURL('**/dashboard/billing/fund?session_id=*');
      await page.waitForSelector('[data-testid=confirmation][data-status=credited]', { timeout: 30_000 });
      expect(await page.textContent('[data-testid=new-balance]')).toContain('$20.00');
      await screenshot(page, 'billing-confirmation');

      await page.goto('/dashboard/billing');
      expect(await page.textContent('main')).toContain('$20.00');
      await screenshot(page, 'billing-overview-funded');
    } finally {
      await context.close();
    }

    const { id } = (await world.portal.database.knex('users').where({ email }).first('id')) as { id: number };
    expect(await ledgerNano(world.portal, `user:${id}`)).toBe(20e9);
    await waitFor(
      'the gateway to serve the funded key',
      () =>
        chat(created.secret).then(
          () => true,
          () => false,
        ),
      1_000,
    );
  });

  // Found by an outside probe: a refused organisation budget led to a page naming
  // "monthly_budget (body)" with only a way home, and what was typed was lost.
  it('a refused form says what was wrong in words and goes back to the form with what was typed', async () => {
    const [org] = (await world.portal.portal.deps
      .database('organisations')
      .insert({ name: 'Form Errors Ltd', slug: `form-errors-${Date.now()}` })
      .returning('id')) as { id: number }[];
    const user = await signUp(world.portal, { organisationId: org!.id, role: 'org_admin', password: 'browser password 42' });
    const { page, problems, close } = await signInPage(browser, world.portal.url, user, '/dashboard/billing');
    try {
      await page.fill('#monthly_budget', '-1');
      await page.click('form[action="/dashboard/admin/organisation/monthly-budget"] button[type=submit]');
      await page.waitForSelector('text=Back to the form');
      expect(await page.textContent('.lead')).toBe('Some input is not valid: monthly budget');
      const issues = await page.textContent('ul.issues');
      expect(issues).toContain('monthly budget');
      expect(issues).not.toContain('monthly_budget');
      expect(issues).not.toContain('(body)');
      await screenshot(page, 'form-refused');
      await page.click('text=Back to the form');
      await page.waitForURL('**/dashboard/billing');
      await waitFor('the typed value to be back', async () => (await page.inputValue('#monthly_budget')) === '-1');
      // The browser notes the refused post's status; nothing else went wrong on either page.
      expect(problems.filter((p) => !p.includes('status of 422'))).toEqual([]);
    } finally {
      await close();
    }
  });
});
