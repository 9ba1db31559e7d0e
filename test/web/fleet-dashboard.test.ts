// The dashboard's fleet view in a REAL headless Chromium (test/web/browser.ts) against two REAL
// petrelds with their web APIs on loopback, one PKI (so one token works on both) and one REAL
// PostgreSQL registry (test/fleet/pg.ts): signed in on node A, the page shows the unikernels of
// A and B grouped by node, follows B's console live, draws its plot, destroys B's unikernel and
// deploys another on B through the form, each by B's own API;
// B answers CORS for the fleet's origins only; B refusing the token (revoked in its local
// deny-list alone) shows B's error while A's unikernels stay. The fake-kvm TEST DOUBLE stands in
// for KVM where it is missing.

import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { expect, it } from 'vitest';
import { caCommand } from '../../src/cli/commands/ca.js';
import { canaryImage, guestMode } from '../engine/guest.js';
import { describeWithPostgres } from '../fleet/pg.js';
import { repo } from '../repo.js';
import { eventually, mintToken, type Petreld, startPetreld, webRequest } from '../tls/petreld.js';
import {
  chromiumMissing,
  consoleIsLive,
  launchChromium,
  playwrightVersion,
  seriesPixels,
  signIn,
} from './browser.js';
import { checkResponse } from './openapi.js';

const missing = chromiumMissing();
if (missing !== null) {
  if (process.env.CI === 'true') throw new Error(missing);
  console.warn(`fleet dashboard browser test skipped: ${missing}`);
}

/** `petrel ca ARGS...` in this process. */
async function ca(...args: string[]): Promise<number> {
  return caCommand.run(args, {
    stdout: () => {},
    stderr: () => {},
    readFile: async () => new Uint8Array(),
    writeFile: async () => {},
  });
}

const originOf = (p: Petreld) => `https://127.0.0.1:${p.webPort}`;

describeWithPostgres('the fleet view of the dashboard', (pg) => {
  it.skipIf(missing !== null)(
    `shows every node on one page, acting on each node by its own API, CORS for the fleet only${missing === null ? '' : ` (skipped: ${missing})`}`,
    async () => {
      const db = await pg.schema();
      const flags = (id: string) => ({ fleetDb: db.url, nodeId: id, statsInterval: '250ms' });
      const a = await startPetreld({ alice: ['--vms', '2', '--mem', '64'] }, flags('node-a'), { web: true });
      let b: Petreld | undefined;
      let browser: Browser | undefined;
      try {
        b = await startPetreld({}, flags('node-b'), { web: true, ca: a.ca });
        const nodeB = b;
        const token = await mintToken(a, 'alice', 'fleet');
        const auth = { authorization: `Bearer ${token}` };
        const image = await readFile(canaryImage);
        const create = (p: Petreld, name: string) =>
          webRequest(p, 'PUT', `/api/v1/unikernels/${name}?mem=16&arg=count&arg=300`, auth, image);
        expect((await create(a, 'a1')).status).toBe(201);
        expect((await create(b, 'b1')).status).toBe(201);

        // The fleet as A lists it: A first, then B, each with its web origin.
        const fleet = await webRequest(a, 'GET', '/api/v1/fleet', auth);
        const listed = JSON.parse(fleet.text);
        checkResponse('GET', '/api/v1/fleet', fleet.status, listed);
        expect(
          listed.nodes.map((n: { id: string; origin: string; self: boolean }) => [n.id, n.origin, n.self]),
        ).toEqual([
          ['node-a', originOf(a), true],
          ['node-b', originOf(b), false],
        ]);
        // A's page may connect to B (and nothing else besides itself).
        const page = await webRequest(a, 'GET', '/');
        const connect = /connect-src ([^;]*);/.exec(String(page.headers['content-security-policy']));
        expect(connect?.[1]?.split(' ').sort()).toEqual(["'self'", originOf(a), originOf(b)].sort());

        // B's CORS: A's origin is echoed, without credentials; an origin outside the fleet gets nothing.
        const preflight = (origin: string) =>
          webRequest(nodeB, 'OPTIONS', '/api/v1/unikernels/b1', {
            origin,
            'access-control-request-method': 'DELETE',
            'access-control-request-headers': 'authorization',
          });
        const known = await preflight(originOf(a));
        expect(known.status).toBe(204);
        expect(known.headers['access-control-allow-origin']).toBe(originOf(a));
        expect(known.headers['access-control-allow-headers']).toBe(
          'Authorization, Content-Type, X-CSRF-Token',
        );
        expect(known.headers['access-control-allow-credentials']).toBeUndefined();
        const stranger = await preflight('https://evil.example');
        expect(stranger.headers['access-control-allow-origin']).toBeUndefined();
        expect(stranger.headers['access-control-allow-methods']).toBeUndefined();
        const strangerGet = await webRequest(nodeB, 'GET', '/api/v1/unikernels', {
          ...auth,
          origin: 'https://127.0.0.1:1',
        });
        expect(strangerGet.headers['access-control-allow-origin']).toBeUndefined();

        browser = await launchChromium(await readFile(path.join(a.ca, 'web.pem')));
        console.log(
          `chromium ${browser.version()}, playwright-core ${playwrightVersion()}, guests ${guestMode}`,
        );
        const tab: Page = await (
          await browser.newContext({ viewport: { width: 1280, height: 1000 } })
        ).newPage();
        await signIn(tab, originOf(a), token);
        const groupA = tab.locator('#node-list [data-node=node-a]');
        const groupB = tab.locator('#node-list [data-node=node-b]');
        await groupA.locator('tr[data-name=a1]').waitFor({ timeout: 15_000 });
        await groupB.locator('tr[data-name=b1]').waitFor({ timeout: 15_000 });
        expect(await groupA.locator('tr[data-name=b1]').count()).toBe(0);
        expect(await groupB.locator('tr[data-name=a1]').count()).toBe(0);
        // The token is in the page's memory only.
        expect(await tab.evaluate('localStorage.length + sessionStorage.length')).toBe(0);

        // B's console, live, from A's page: a line numbered above every one shown when the first came.
        await groupB.locator('tr[data-name=b1]').click();
        await tab.locator('#detail-node').getByText('on node node-b').waitFor();
        await consoleIsLive(tab, 'a newer console line of b1');
        // Its plot, from B's samples: pixels of the series' colour (#2c7fb8) on the canvas.
        await eventually(
          'the memory plot of b1 drawn',
          async () => (await seriesPixels(tab, 'plot-memory')) > 20,
        );

        // Destroyed on B, by B's API, from A's page.
        await tab.locator('#destroy').click();
        await tab.locator('#destroy').click();
        await eventually(
          'b1 destroyed on B',
          async () => ![...nodeB.daemon.engine.running].includes('alice:b1'),
        );
        await groupB.locator('tr[data-name=b1]').waitFor({ state: 'detached' });
        expect([...a.daemon.engine.running].includes('alice:a1')).toBe(true);
        const audits = nodeB.logs.filter((l) => l.event === 'web.audit' && l.action === 'destroy');
        expect(audits.map((l) => [l.token, l.unikernel, l.status])).toEqual([['fleet', 'alice:b1', 200]]);

        // Deployed on B through A's form, the image sent to B's API.
        const form = tab.locator('#deploy-form');
        await form.locator('select[name=node]').selectOption('node-b');
        await form.locator('input[name=name]').fill('b2');
        await form.locator('input[name=image]').setInputFiles(canaryImage);
        await form.locator('input[name=mem]').fill('16');
        await form.locator('textarea[name=args]').fill('count\n300');
        await form.locator('button[type=submit]').click();
        await tab.locator('#deploy-result').getByText('Created b2.').waitFor({ timeout: 20_000 });
        expect([...nodeB.daemon.engine.running]).toContain('alice:b2');
        expect([...a.daemon.engine.running]).not.toContain('alice:b2');
        await groupB.locator('tr[data-name=b2]').waitFor();
        await tab.locator('#detail-node').getByText('on node node-b').waitFor();
        const output = path.join(repo, 'test-results', 'fleet-dashboard');
        await mkdir(output, { recursive: true });
        await tab.screenshot({ path: path.join(output, 'fleet.png'), fullPage: true });
        console.log(`screenshot: ${path.join(output, 'fleet.png')}`);

        // B alone refuses the token now: its group says why, A's unikernels still show.
        expect(await ca('revoke', token, '--state-dir', nodeB.stateDir)).toBe(0);
        await tab.locator('#refresh').click();
        await groupB.locator('.node-error').getByText('E_TOKEN_REVOKED').waitFor({ timeout: 15_000 });
        expect(await groupA.locator('tr[data-name=a1]').count()).toBe(1);
        // And the deploy form no longer offers B.
        expect(await form.locator('select[name=node] option').allTextContents()).toEqual([
          'node-a (this one)',
        ]);
      } finally {
        await browser?.close();
        await b?.stop();
        await a.stop();
      }
    },
    90_000,
  );
});
