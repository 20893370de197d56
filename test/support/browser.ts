// Debian's Chromium driven by playwright-core, headless, no network beyond loopback.
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

/** Where browser tests keep their screenshots (kept as CI artefacts). */
export const artifactsDir = resolve(import.meta.dirname, '../../.data/artifacts/portal');

/** Launches headless Chromium from /usr/bin/chromium. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** Saves a full-page screenshot named `name`.png under the artefacts directory. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(artifactsDir, { recursive: true });
  const path = resolve(artifactsDir, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

/** A signed-in browser page, the console errors and page errors it reported, and its context. */
export interface SignedInPage {
  page: Page;
  problems: string[];
  close(): Promise<void>;
}

/**
 * Opens a fresh context on the portal, signs in through the login form and lands on `returnTo`.
 * Console errors and uncaught page errors are collected in `problems` (a test expects none).
 */
export async function signInPage(
  browser: Browser,
  portalUrl: string,
  user: { email: string; password: string },
  returnTo: string,
): Promise<SignedInPage> {
  const context = await browser.newContext({ baseURL: portalUrl, viewport: { width: 1280, height: 900 } });
  try {
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(m.text());
    });
    page.on('pageerror', (e) => problems.push(e.message));
    await page.goto(`/login?return_to=${encodeURIComponent(returnTo)}`);
    await page.fill('#email', user.email);
    await page.fill('#password', user.password);
    await page.click('form[action="/auth/login"] button[type=submit]');
    await page.waitForURL(`**${returnTo}`);
    return { page, problems, close: () => context.close() };
  } catch (error) {
    await context.close();
    throw error;
  }
}
