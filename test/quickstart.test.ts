// The README's first command, run as a user would (install and build skipped: CI has just done
// them), inside a network namespace this test made: petreld starts, passes preflight and its
// canary; the steps it prints create a canary VM that `petrel` watches and that Debian's
// Chromium, in the same namespace, sees on the dashboard signed in with the token file the
// quickstart names. PETREL_WEB=0 starts without the web listener.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { repo } from './engine/guest.js';
import { makeNetns } from './engine/harness.js';
import { CHROMIUM, chromiumMissing, launchChromium, signIn } from './web/browser.js';

const petrelJs = path.join(repo, 'dist/src/cli/petrel.js');
const petrel = (args: string[]) =>
  spawnSync(process.execPath, [petrelJs, ...args], { encoding: 'utf8', timeout: 20_000 });

interface Quickstart {
  readonly home: string;
  readonly netns: ReturnType<typeof makeNetns>;
  readonly daemon: ChildProcess;
  readonly exited: Promise<number | null>;
  log(): string;
}

const started: Quickstart[] = [];
afterEach(async () => {
  for (const q of started.splice(0)) {
    // `ip netns exec` and the script both exec: this pid is petreld's.
    q.daemon.kill('SIGTERM');
    await q.exited;
    q.netns.destroy();
    await rm(q.home, { recursive: true, force: true });
  }
});

/** scripts/quickstart.sh in a namespace of its own, once petreld is ready. */
async function quickstart(env: NodeJS.ProcessEnv = {}): Promise<Quickstart> {
  const home = await mkdtemp(path.join(tmpdir(), 'petrel-quickstart-'));
  const netns = makeNetns();
  spawnSync('ip', ['-n', netns.name, 'link', 'set', 'lo', 'up']);
  const daemon = spawn(
    'ip',
    ['netns', 'exec', netns.name, 'bash', path.join(repo, 'scripts/quickstart.sh')],
    {
      env: { ...process.env, PETREL_SKIP_INSTALL: '1', PETREL_HOME: home, PETREL_TLS_PORT: '1025', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let log = '';
  daemon.stdout.on('data', (d) => {
    log += d;
  });
  daemon.stderr.on('data', (d) => {
    log += d;
  });
  const exited = new Promise<number | null>((resolve) => daemon.once('exit', (code) => resolve(code)));
  const q = { home, netns, daemon, exited, log: () => log };
  started.push(q);
  const deadline = Date.now() + 30_000;
  while (!log.includes('"msg":"petreld ready"')) {
    if (Date.now() > deadline || daemon.exitCode !== null) throw new Error(`petreld not ready:\n${log}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return q;
}

/** The `petrel …` lines the quickstart printed for the next steps, as argument lists. */
const nextSteps = (log: string): string[][] =>
  log
    .split('\n')
    .filter((l) => l.startsWith('  petrel '))
    .map((l) => l.trim().split(/\s+/u).slice(1));

describe('quickstart', () => {
  it('starts petreld ready for clients; the steps it prints create a canary VM petrel watches', async () => {
    const q = await quickstart({ PETREL_WEB: '0' });
    const log = q.log();
    expect(log).toContain('quickstart: starting petreld');
    const runtimes = /runtimes ([a-z,]+)/.exec(log)?.[1] ?? '';
    // On a nested software KVM the start-up says hvt guests may not use SSE, pointing to spt.
    if (runtimes.includes('hvt') && existsSync('/sys/module/kvm_pvm')) {
      expect(log).toMatch(
        /"level":40,.*"check":"hvtSse","status":"WARN",.*"fix":"run unikernels that use floating point under spt/u,
      );
    }
    // PETREL_WEB=0: no listener, and nothing said of a dashboard.
    expect(log).toMatch(/"check":"web","status":"PASS","detail":"not configured \(no --web-listen\)"/u);
    expect(log).not.toContain('quickstart: the dashboard');
    expect(existsSync(path.join(q.home, 'dashboard.token'))).toBe(false);

    const [create, consoleStep, nodeInfo] = nextSteps(log);
    expect(create?.slice(0, 2)).toEqual(['create', 'quickstart:hello']);
    const created = petrel(create ?? []);
    expect(created.status, created.stderr).toBe(0);
    // `petrel console` follows until interrupted: read until the canary's line, then Ctrl-C.
    expect(consoleStep?.slice(0, 2)).toEqual(['console', 'quickstart:hello']);
    const watch = spawn(process.execPath, [petrelJs, ...(consoleStep ?? [])]);
    let lines = '';
    watch.stdout.on('data', (d) => {
      lines += d;
    });
    const watched = new Promise<number | null>((resolve) => watch.once('exit', (code) => resolve(code)));
    const until = Date.now() + 10_000;
    while (!lines.includes('petrel-canary hi') && Date.now() < until)
      await new Promise((r) => setTimeout(r, 50));
    watch.kill('SIGINT');
    expect(await watched).toBe(0);
    expect(lines).toContain('petrel-canary hi');
    const run = ['--run-dir', path.join(q.home, 'run')];
    const info = petrel(['info', 'quickstart:hello', '--json', ...run]);
    expect(info.status, info.stderr).toBe(0);
    expect(info.stdout).toContain('quickstart:hello');
    const node = petrel([...(nodeInfo ?? []), '--json']);
    expect(node.status, node.stderr).toBe(0);
    expect(JSON.parse(node.stdout).canaries.length).toBeGreaterThan(0);
    expect(petrel(['destroy', 'quickstart:hello', ...run]).status).toBe(0);
  }, 60_000);

  it.skipIf(chromiumMissing() !== null)(
    `serves the dashboard: signed in with the token file it names, Chromium sees what the next steps created${chromiumMissing() === null ? '' : ` (skipped: ${chromiumMissing()})`}`,
    async () => {
      const q = await quickstart({ PETREL_WEB_PORT: '8443' });
      const log = q.log();
      const url = /quickstart: the dashboard: (https:\/\/\S+\/)/u.exec(log)?.[1];
      expect(url).toBe('https://127.0.0.1:8443/');
      const tokenFile = /sign in with the token in (\S+)/u.exec(log)?.[1] ?? '';
      expect(tokenFile).toBe(path.join(q.home, 'dashboard.token'));
      expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
      expect(log).toContain(`trusts ${path.join(q.home, 'pki', 'cacert.pem')} as an authority`);

      const [create] = nextSteps(log);
      const created = petrel(create ?? []);
      expect(created.status, created.stderr).toBe(0);

      // Chromium in the quickstart's namespace, where 127.0.0.1:8443 is petreld's.
      const wrapper = path.join(q.home, 'chromium-in-netns');
      await writeFile(wrapper, `#!/bin/sh\nexec ip netns exec ${q.netns.name} ${CHROMIUM} "$@"\n`);
      await chmod(wrapper, 0o755);
      const browser = await launchChromium(await readFile(path.join(q.home, 'pki', 'web.pem')), wrapper);
      try {
        const page = await browser.newPage();
        await signIn(page, (url ?? '').replace(/\/$/u, ''), (await readFile(tokenFile, 'utf8')).trim());
        await page.locator('#who').getByText('quickstart').waitFor();
        await page.locator('#node-list tr[data-name=hello]').waitFor({ timeout: 15_000 });
        expect(await page.locator('#node-list tr[data-name=hello]').count()).toBe(1);
      } finally {
        await browser.close();
      }
    },
    90_000,
  );
});
