// The portal in a real browser (Chromium through playwright-core): sign-up → the verification
// email from a real SMTP receiver → verify → sign in → dashboard → sign out; password reset
// from its email; SSO with both providers through the accept-terms path. Screenshots of the
// main pages go to .data/artifacts/portal/.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext } from 'playwright-core';
import { launchChromium, screenshot } from '../support/browser.js';
import { startOidcProvider, type TestOidcProvider } from '../support/oidc-provider.js';
import { startPortalHarness, type PortalHarness } from '../support/portal-harness.js';
import { startSmtpReceiver, type SmtpReceiver } from '../support/smtp-receiver.js';
import { waitFor } from '../support/wait-for.js';

let harness: PortalHarness;
let smtp: SmtpReceiver;
let browser: Browser;
const providers: TestOidcProvider[] = [];
beforeAll(async () => {
  smtp = await startSmtpReceiver();
  harness = await startPortalHarness({
    settings: { SVC_SMTP_URL: smtp.url },
    settingsFor: async (baseUrl) => {
      const a = await startOidcProvider({ redirectUri: `${baseUrl}/oauth/sso-a/login/callback/` });
      const b = await startOidcProvider({ redirectUri: `${baseUrl}/oauth/sso-b/login/callback/`, clientId: 'portal-b' });
      providers.push(a, b);
      return {
        SVC_SSO_A_ISSUER: a.issuer,
        SVC_SSO_A_CLIENT_ID: a.clientId,
        SVC_SSO_A_CLIENT_SECRET: a.clientSecret,
        SVC_SSO_A_LABEL: 'Acme Login',
        SVC_SSO_B_ISSUER: b.issuer,
        SVC_SSO_B_CLIENT_ID: b.clientId,
        SVC_SSO_B_CLIENT_SECRET: b.clientSecret,
        SVC_SSO_B_LABEL: 'Partner ID',
      };
    },
  });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await harness?.close();
  await smtp?.close();
  for (const p of providers) await p.close();
});

const newContext = (): Promise<BrowserContext> => browser.newContext({ baseURL: harness.url, viewport: { width: 1280, height: 860 } });

describe('in the browser', () => {
  it('signs up, verifies from the email, signs in, sees the dashboard and signs out', async () => {
    const context = await newContext();
    try {
      const page = await context.newPage();
      await page.goto('/');
      await screenshot(page, 'home');
      await page.goto('/pricing');
      await screenshot(page, 'pricing');
      await page.goto('/models-public');
      await screenshot(page, 'models');

      const email = `browser-${Date.now()}@example.com`;
      const password = 'browser password 42';
      await page.goto('/signup');
      await page.fill('#name', 'Bea Browser');
      await page.fill('#email', email);
      await page.fill('#password', password);
      await page.check('input[name=accept_terms]');
      await screenshot(page, 'signup');
      await page.click('form[action="/auth/register"] button[type=submit]');
      await page.waitForURL('**/login?notice=check_email');
      expect(await page.textContent('.alert-ok')).toContain('Check your inbox');

      await waitFor('the verification email', () => smtp.linkTo(email, '/verify-email?token=') !== undefined);
      await page.goto(smtp.linkTo(email, '/verify-email?token=')!);
      expect(await page.textContent('h1')).toBe('Email verified');
      await screenshot(page, 'verified');

      await page.goto('/login');
      await page.fill('#email', email);
      await page.fill('#password', password);
      await screenshot(page, 'login');
      await page.click('form[action="/auth/login"] button[type=submit]');
      await page.waitForURL('**/dashboard');
      expect(await page.textContent('h1')).toBe('Welcome, Bea Browser');
      await screenshot(page, 'dashboard');

      await page.click('.account-nav a[href="/logout"]');
      await page.waitForURL('**/login?notice=signed_out');
      // Back shows the sign-in page, not the account from the browser's cache.
      await page.goBack();
      await page.waitForURL('**/login?return_to=%2Fdashboard');
      expect(await page.textContent('h1')).not.toContain('Welcome');
      await page.goto('/dashboard');
      await page.waitForURL('**/login?return_to=%2Fdashboard');
    } finally {
      await context.close();
    }
  });

  it('resets a forgotten password from the emailed link', async () => {
    const email = `reset-${Date.now()}@example.com`;
    await harness.portal.deps.users.create(
      { email, displayName: 'Rita Reset', passwordHash: null, legalVersion: '1', emailVerified: true },
      new Date(),
    );
    const context = await newContext();
    try {
      const page = await context.newPage();
      await page.goto('/forgot-password');
      await page.fill('#email', email);
      await page.click('form[action="/auth/forgot-password"] button[type=submit]');
      expect(await page.textContent('.alert-ok')).toContain('If an account exists');
      await waitFor('the reset email', () => smtp.linkTo(email, '/reset-password?token=') !== undefined);
      await page.goto(smtp.linkTo(email, '/reset-password?token=')!);
      // The second field mistyped: refused, the link still good for a second try.
      await page.fill('#password', 'a fresh password 77');
      await page.fill('#confirm_password', 'a fresh pasword 77');
      await page.click('form[action="/auth/reset-password"] button[type=submit]');
      expect(await page.textContent('.alert-error')).toContain('The two passwords differ');
      await page.fill('#password', 'a fresh password 77');
      await page.fill('#confirm_password', 'a fresh password 77');
      await screenshot(page, 'reset-password');
      await page.click('form[action="/auth/reset-password"] button[type=submit]');
      await page.waitForURL('**/login?notice=reset');
      await page.fill('#email', email);
      await page.fill('#password', 'a fresh password 77');
      await page.click('form[action="/auth/login"] button[type=submit]');
      await page.waitForURL('**/dashboard');
      expect(await page.textContent('h1')).toBe('Welcome, Rita Reset');
    } finally {
      await context.close();
    }
  });

  it.each([
    ['sso-a', 'Acme Login', 0],
    ['sso-b', 'Partner ID', 1],
  ] as const)('signs a new user in with %s through the accept-terms step', async (id, label, index) => {
    const person = {
      sub: `browser-${id}-${Date.now()}`,
      email: `sso-${id}-${Date.now()}@example.com`,
      emailVerified: true,
      name: `Sam ${id}`,
    };
    providers[index]!.signInAs(person);
    const context = await newContext();
    try {
      const page = await context.newPage();
      await page.goto('/login');
      await page.click(`a.button:has-text("Continue with ${label}")`);
      await page.waitForURL('**/signup?terms=required');
      expect(await page.textContent('.alert-error')).toContain('Accept the terms');
      if (id === 'sso-a') await screenshot(page, 'sso-accept-terms');
      await page.check('form[action="/auth/accept-tos"] input[name=accept]');
      await page.click(`form[action="/auth/accept-tos"] button[value="${id}"]`);
      await page.waitForURL('**/dashboard');
      expect(await page.textContent('h1')).toBe(`Welcome, Sam ${id}`);
    } finally {
      await context.close();
    }
  });
});
