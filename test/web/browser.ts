// Debian's headless Chromium for the dashboard's tests and benchmarks, driven by playwright-core
// (pinned in package.json): no sandbox (root), the web certificate trusted by its key's pin.

import { createHash, X509Certificate } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { type Browser, chromium, type Page } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

/** Why Chromium cannot run here, or null when it can. */
export const chromiumMissing = (): string | null =>
  existsSync(CHROMIUM)
    ? null
    : `${CHROMIUM} is missing (scripts/install-deps.sh --tests installs Debian's chromium)`;

export const playwrightVersion = (): string =>
  (createRequire(import.meta.url)('playwright-core/package.json') as { version: string }).version;

/**
 * Launches Chromium trusting `webPem` (the web API's certificate) by the SHA-256 of its public key.
 * `executablePath`: another way to start Debian's Chromium (a wrapper that enters a namespace).
 */
export async function launchChromium(webPem: Buffer, executablePath: string = CHROMIUM): Promise<Browser> {
  const spki = new X509Certificate(webPem).publicKey.export({ type: 'spki', format: 'der' });
  const pin = createHash('sha256').update(spki).digest('base64');
  // The test double's preload (no /dev/kvm) is for tenders, not for the browser.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'LD_PRELOAD'));
  return chromium.launch({
    executablePath,
    args: ['--no-sandbox', `--ignore-certificate-errors-spki-list=${pin}`],
    env: env as Record<string, string>,
  });
}

/** Signs `page` in at `origin` with `token` through the dashboard's form. */
export async function signIn(page: Page, origin: string, token: string): Promise<void> {
  await page.goto(`${origin}/`);
  await page.locator('#sign-in textarea').fill(token);
  await page.locator('#sign-in button').click();
  await page.locator('#sign-out').waitFor();
}
