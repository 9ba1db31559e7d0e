// The dashboard in a REAL headless Chromium (Debian's chromium, driven by playwright-core) against
// a REAL petreld with its web API (test/tls/petreld.ts): sign in with a token, deploy the canary
// through the form, its console live, its plot drawn, destroy; a hostile console runs no script;
// a change without the CSRF token is refused. The certificate is trusted by its key's pin, not
// ignored. Guests are the canary (the fake-kvm TEST DOUBLE where KVM is missing).

import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canaryImage, guestMode } from '../engine/guest.js';
import { repo } from '../repo.js';
import { createCanary, eventually, mintToken, type Petreld, startPetreld } from '../tls/petreld.js';
import {
  chromiumMissing,
  consoleIsLive,
  launchChromium,
  playwrightVersion,
  seriesPixels,
} from './browser.js';

/** Where the test writes what a person would look at (the screenshot). */
export const OUTPUT = path.join(repo, 'test-results', 'dashboard');

const missing = chromiumMissing();
if (missing !== null) {
  // CI installs it: there a missing browser is a failure, not a skip.
  if (process.env.CI === 'true') throw new Error(missing);
  console.warn(`dashboard browser tests skipped: ${missing}`);
}

let petreld: Petreld;
let browser: Browser;
let page: Page;
let token: string;
let origin: string;

const running = () => [...petreld.daemon.engine.running].sort();

describe.skipIf(missing !== null)(
  `the dashboard in headless Chromium${missing === null ? '' : ` (skipped: ${missing})`}`,
  () => {
    beforeAll(async () => {
      petreld = await startPetreld(
        { alice: ['--vms', '3', '--mem', '64'] },
        { statsInterval: '250ms' },
        { web: true },
      );
      token = await mintToken(petreld, 'alice', 'browser');
      origin = `https://127.0.0.1:${petreld.webPort}`;
      browser = await launchChromium(await readFile(path.join(petreld.ca, 'web.pem')));
      console.log(
        `chromium ${browser.version()}, playwright-core ${playwrightVersion()}, guests ${guestMode}`,
      );
      page = await (await browser.newContext({ viewport: { width: 1280, height: 1000 } })).newPage();
    }, 60_000);
    afterAll(async () => {
      await browser?.close();
      await petreld?.stop();
    });

    it('signs in with a token into the dashboard of the delegation', async () => {
      await page.goto(`${origin}/`);
      await page.locator('#sign-in textarea').fill(token);
      await page.locator('#sign-in button').click();
      await page.locator('#who').getByText('alice').waitFor();
      await page.locator('#policy-bars').getByText('Unikernels: 0 of 3').waitFor();
      const cookies = await page.context().cookies();
      expect(cookies.map((c) => [c.name, c.httpOnly, c.secure, c.sameSite])).toEqual([
        ['__Host-petrel-session', true, true, 'Strict'],
      ]);
      // HttpOnly: the page's scripts cannot read the session.
      expect(await page.evaluate('document.cookie')).toBe('');
    });

    it('deploys the canary through the form; its console lines arrive live and its plot is drawn', async () => {
      const form = page.locator('#deploy-form');
      await form.locator('input[name=name]').fill('web1');
      await form.locator('input[name=image]').setInputFiles(canaryImage);
      await form.locator('input[name=mem]').fill('16');
      await form.locator('textarea[name=args]').fill('count\n300');
      await form.locator('button[type=submit]').click();
      await page.locator('#deploy-result').getByText('Created web1.').waitFor({ timeout: 20_000 });
      expect(await page.locator('#deploy-progress').getAttribute('value')).toBe('1');
      expect(running()).toEqual(['alice:web1']);
      await page.locator('#detail-name').getByText('web1').waitFor();
      // Live: a line numbered above every line shown when the first arrived.
      await consoleIsLive(page, 'a newer console line');
      await eventually('the memory plot drawn', async () => (await seriesPixels(page, 'plot-memory')) > 20);
      // CPU is a rate: drawn once two samples are in.
      await eventually('the CPU plot drawn', async () => (await seriesPixels(page, 'plot-cpu')) > 20);
      expect(await page.locator('#node-list tr[data-name=web1]').count()).toBe(1);
      await mkdir(OUTPUT, { recursive: true });
      await page.screenshot({ path: path.join(OUTPUT, 'dashboard.png'), fullPage: true });
      console.log(`screenshot: ${path.join(OUTPUT, 'dashboard.png')}`);
    }, 60_000);

    it('shows a hostile console as text: no element made, no script run', async () => {
      const payload = '<script>window.pwned=1</script><img/src/onerror=window.pwned=2>';
      await createCanary(petreld, 'alice', 'evil', ['wait', payload]);
      // A reload lists it at once (the page refreshes by itself every 10 s); the session survives it.
      await page.reload();
      const row = page.locator('#node-list tr[data-name=evil]');
      await row.waitFor();
      await row.click();
      await page.locator('#console .line').getByText('window.pwned=1').waitFor({ timeout: 15_000 });
      const line = await page.locator('#console .line').filter({ hasText: 'pwned' }).first().textContent();
      expect(line).toContain(`petrel-canary ${payload}`);
      expect(await page.locator('#console script, #console img').count()).toBe(0);
      expect(await page.locator('#detail-config').textContent()).toContain(payload);
      expect(await page.locator('#detail-config img, #detail-config script').count()).toBe(0);
      expect(await page.evaluate('typeof window.pwned')).toBe('undefined');
    }, 60_000);

    it('refuses a change made with the cookie but without the CSRF token (403), changing nothing', async () => {
      const status = await page.evaluate(`(async () => {
      const reply = await fetch('/api/v1/unikernels/evil', { method: 'DELETE' });
      return [reply.status, (await reply.json()).error.code];
    })()`);
      expect(status).toEqual([403, 'E_WEB_CSRF']);
      expect(running()).toEqual(['alice:evil', 'alice:web1']);
    });

    it('replaces from the detail view: a check that passes keeps the new image, one that fails rolls back', async () => {
      await page.locator('#node-list tr[data-name=web1]').click();
      await page.locator('#detail-name').getByText('web1').waitFor();
      await page.locator('#replace summary').click();
      const form = page.locator('#replace-form');
      const result = page.locator('#replace-result');
      const replace = async (pattern: string, within: string) => {
        await form.locator('input[name=image]').setInputFiles(canaryImage);
        await form.locator('select[name=check]').selectOption('console-line');
        await form.locator('input[name=target]').fill(pattern);
        await form.locator('input[name=within]').fill(within);
        await form.locator('button[type=submit]').click();
        await result.getByText('checking').waitFor({ state: 'detached', timeout: 30_000 });
        return (await result.textContent()) ?? '';
      };
      const started = (): Promise<string> =>
        page.evaluate(`fetch('/api/v1/unikernels/web1').then((r) => r.json()).then((u) => u.started)`);
      const before = await started();
      // The old configuration is kept: the new canary counts too.
      expect(await replace('count [0-9]+', '20s')).toMatch(/^replaced unikernel alice:web1/);
      expect(Date.parse(await started())).toBeGreaterThan(Date.parse(before));
      expect(running()).toEqual(['alice:evil', 'alice:web1']);
      const failed = await replace('never printed', '1s');
      expect(failed).toContain('E_REFUSED');
      expect(running()).toEqual(['alice:evil', 'alice:web1']);
      const audits = petreld.logs.filter((l) => l.event === 'web.audit' && l.action === 'replace');
      expect(audits.map((l) => [l.token, l.unikernel, l.status])).toEqual([
        ['browser', 'alice:web1', 200],
        ['browser', 'alice:web1', 409],
      ]);
    }, 60_000);

    it('restarts and destroys from the detail view, and stays usable at a phone’s width', async () => {
      await page.locator('#node-list tr[data-name=web1]').click();
      await page.locator('#detail-name').getByText('web1').waitFor();
      const started = (): Promise<string> =>
        page.evaluate(`fetch('/api/v1/unikernels/web1').then((r) => r.json()).then((u) => u.started)`);
      const before = await started();
      await page.locator('#restart').click();
      await eventually('web1 restarted', async () => Date.parse(await started()) > Date.parse(before));
      expect(petreld.logs.filter((l) => l.event === 'web.audit' && l.action === 'restart').length).toBe(1);
      await page.locator('#destroy').click();
      await page.locator('#destroy').click();
      await eventually('web1 destroyed', async () => !running().includes('alice:web1'));
      await page.locator('#node-list tr[data-name=web1]').waitFor({ state: 'detached' });
      await page.setViewportSize({ width: 390, height: 844 });
      expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    }, 30_000);
  },
);
