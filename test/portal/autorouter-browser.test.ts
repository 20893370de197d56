// The autorouter page in a real browser (Chromium through playwright-core): after `auto` calls
// through the official openai SDK, the page draws its charts with the locally served Chart.js (no
// console errors, CSP intact), the preference form changes what the gateway picks, and the help
// panel hides and comes back.
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
  world = await startPortalWithGateway([
    {
      name: 'sim-eu',
      region: 'EU',
      models: [
        { id: 'small-model', input_usd_per_mtok: 0.2, output_usd_per_mtok: 0.8 },
        { id: 'large-model', input_usd_per_mtok: 3, output_usd_per_mtok: 15 },
      ],
    },
  ]);
  ({ portal, gateway } = world);
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await world?.close();
});

describe('the autorouter in the browser', () => {
  it('shows what auto chose, saves a preference the gateway honours, and hides its help', async () => {
    const { client, email, password, id } = await signUp(portal, { name: 'Rita Router', password: 'browser password 42' });
    await fundWallet(gateway, `user:${id}`, 5);
    const { secret } = (await (await client.postJson('/dashboard/keys/new', { name: 'routed service' })).json()) as { secret: string };
    const sdk = new OpenAI({ baseURL: `${gateway.gateway.url}/v1`, apiKey: secret, maxRetries: 0 });
    const auto = async () =>
      (await sdk.chat.completions.create({ model: 'auto', messages: [{ role: 'user', content: 'choose for me' }], max_tokens: 5 })).model;
    for (let i = 0; i < 3; i++) expect(await auto()).toBe('small-model');
    await waitFor('three auto requests in the report', async () => {
      const res = await client.get('/dashboard/api/autorouter', { accept: 'application/json' });
      return ((await res.json()) as { report: { totals: { requests: number } } }).report.totals.requests === 3;
    });

    const { page, problems, close } = await signInPage(browser, portal.url, { email, password }, '/dashboard/autorouter');
    try {
      await page.waitForSelector('html[data-charts=drawn]');
      expect(await page.textContent('[data-testid=autorouter-requests]')).toBe('3');
      expect(await page.textContent('[data-testid=autorouter-table] tr[data-model="small-model"] [data-field=requests]')).toBe('3');
      // Compared with the most expensive model by default, auto saved money.
      expect(await page.textContent('[data-testid=autorouter-saving]')).toMatch(/^\$0\.0+[1-9]/);
      await screenshot(page, 'autorouter');

      await page.selectOption('#user-mode', 'premium');
      await page.click('[data-testid=form-user] button[value=save]');
      await page.waitForURL('**/dashboard/autorouter?notice=user');
      expect(await page.textContent('[data-testid=autorouter-effective]')).toContain('premium');
      expect(await page.textContent('[data-testid=autorouter-keys] [data-field=effective]')).toContain('premium');
      await waitFor('auto to choose the premium model', async () => (await auto()) === 'large-model', 10_000, 50);

      await page.click('[data-testid=help-hide]');
      await page.waitForSelector('[data-testid=help-show]');
      expect(await page.locator('[data-testid=help-autorouter]').count()).toBe(0);
      await page.click('[data-testid=help-show]');
      await page.waitForSelector('[data-testid=help-autorouter]');
      await screenshot(page, 'autorouter-after-preference');
      expect(problems).toEqual([]);
    } finally {
      await close();
    }
  });
});
