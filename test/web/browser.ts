// Debian's headless Chromium for the dashboard's tests and benchmarks, driven by playwright-core
// (pinned in package.json): no sandbox (root), the web certificate trusted by its key's pin.

import { createHash, X509Certificate } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { type Browser, chromium, type Page } from 'playwright-core';
import { eventually } from '../tls/petreld.js';

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

/**
 * Pixels of the dashboard plots' first colour (#2c7fb8) on the canvas `id` of `page`: the series,
 * not the grid. Page code is given as text: the tests' TypeScript has no DOM.
 */
export const seriesPixels = (page: Page, id: string): Promise<number> =>
  page.evaluate(`(() => {
    const canvas = document.getElementById(${JSON.stringify(id)});
    const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    let n = 0;
    for (let i = 0; i < data.length; i += 4)
      if (Math.abs(data[i] - 44) < 8 && Math.abs(data[i + 1] - 127) < 8 && Math.abs(data[i + 2] - 184) < 8) n++;
    return n;
  })()`);

/**
 * Waits until the console view of `page` shows a line numbered (the canary's `count N`) above
 * every line it showed when the first arrived: its lines come live. `what` names it in a failure.
 */
export async function consoleIsLive(page: Page, what: string): Promise<void> {
  await page.locator('#console .line').first().waitFor({ timeout: 15_000 });
  const numbers = async () =>
    (await page.locator('#console .line').allTextContents()).map((t) =>
      Number(/count (\d+)/.exec(t)?.[1] ?? 0),
    );
  const first = Math.max(...(await numbers()));
  await eventually(what, async () => Math.max(...(await numbers())) > first + 1);
}
