// Usage and the request log in a real browser (Chromium through playwright-core): after calls
// through the official openai SDK, the usage page draws its charts with the locally served
// Chart.js (no console errors, CSP intact) beside the table, and a request in the log opens its
// detail with the attempts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import type { Browser } from 'playwright-core';
import { launchChromium, screenshot, signInPage } from '../support/browser.js';
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

describe('usage in the browser', () => {
  it('draws the charts and opens a request from the log', async () => {
    const { client, email, password, id } = await signUp(portal, { name: 'Uma Usage', password: 'browser password 42' });
    await fundWallet(gateway, `user:${id}`, 5);
    const { secret } = (await (await client.postJson('/dashboard/keys/new', { name: 'charted service' })).json()) as { secret: string };
    const sdk = new OpenAI({ baseURL: `${gateway.gateway.url}/v1`, apiKey: secret, maxRetries: 0 });
    for (let i = 0; i < 3; i++)
      await sdk.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: `hello ${i}` }], max_tokens: 5 });
    await waitFor('three requests in the log', async () => {
      const page = (await (await client.get('/dashboard/request-log', { accept: 'application/json' })).json()) as { data: unknown[] };
      return page.data.length === 3;
    });

    const { page, problems, close } = await signInPage(browser, portal.url, { email, password }, '/dashboard/usage');
    try {
      await page.waitForSelector('html[data-charts=drawn]');
      expect(await page.textContent('[data-testid=usage-requests]')).toBe('3');
      expect(await page.locator('[data-testid=usage-table] tbody tr').count()).toBe(1);
      await screenshot(page, 'usage');

      await page.click('a[href="/dashboard/request-log"]');
      await page.waitForSelector('[data-testid=log-table]');
      expect(await page.locator('[data-testid=log-table] tbody tr').count()).toBe(3);
      await screenshot(page, 'request-log');
      await page.click('[data-testid=log-table] tbody tr:first-child a');
      await page.waitForSelector('[data-testid=attempts]');
      expect(await page.textContent('[data-testid=attempts]')).toContain('sim-eu');
      await screenshot(page, 'request-detail');
      await page.click('nav a[href="/dashboard/models"]');
      await page.waitForSelector('[data-testid=models-table]');
      await page.click('a[href="/dashboard/models/gpt-4o-mini"]');
      expect(await page.textContent('[data-testid=model-requests]')).toBe('3');
      await screenshot(page, 'model-detail');
      expect(problems).toEqual([]);
    } finally {
      await close();
    }
  });
});
