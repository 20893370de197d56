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
