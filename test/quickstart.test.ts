// The README's first command, run as a user would (install and build skipped: CI has just done
// them), inside a network namespace this test made: petreld starts, passes preflight and its
// canary, and a canary VM can then be created and watched with `petrel`.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repo } from './engine/guest.js';
import { makeNetns } from './engine/harness.js';

const petrel = (args: string[]) =>
  spawnSync(process.execPath, [path.join(repo, 'dist/src/cli/petrel.js'), ...args], {
    encoding: 'utf8',
    timeout: 20_000,
  });

describe('quickstart', () => {
  it('starts petreld ready for clients, and petrel creates and watches a canary VM', async () => {
    const home = await mkdtemp(path.join(tmpdir(), 'petrel-quickstart-'));
    const netns = makeNetns();
    spawnSync('ip', ['-n', netns.name, 'link', 'set', 'lo', 'up']);
    const daemon = spawn(
      'ip',
      ['netns', 'exec', netns.name, 'bash', path.join(repo, 'scripts/quickstart.sh')],
      {
        env: { ...process.env, PETREL_SKIP_INSTALL: '1', PETREL_HOME: home, PETREL_TLS_PORT: '1025' },
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
    try {
      const deadline = Date.now() + 30_000;
      while (!log.includes('"msg":"petreld ready"')) {
        if (Date.now() > deadline || daemon.exitCode !== null) throw new Error(`petreld not ready:\n${log}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(log).toContain('quickstart: starting petreld');
      const run = ['--run-dir', path.join(home, 'run')];
      const runtimes = /runtimes ([a-z,]+)/.exec(log)?.[1] ?? '';
      // On a nested software KVM the start-up says hvt guests may not use SSE, pointing to spt.
      if (runtimes.includes('hvt') && existsSync('/sys/module/kvm_pvm')) {
        expect(log).toMatch(
          /"level":40,.*"check":"hvtSse","status":"WARN",.*"fix":"run unikernels that use floating point under spt/u,
        );
      }
      const image = path.join(repo, 'native/build', runtimes.includes('hvt') ? 'canary.hvt' : 'canary.spt');
      const created = petrel(['create', 'hello', image, '--arg', 'wait', '--arg', 'quick', ...run]);
      expect(created.status, created.stderr).toBe(0);
      // `petrel console` follows until interrupted: read until the canary's line, then Ctrl-C.
      const watch = spawn(process.execPath, [
        path.join(repo, 'dist/src/cli/petrel.js'),
        'console',
        'hello',
        ...run,
      ]);
      let lines = '';
      watch.stdout.on('data', (d) => {
        lines += d;
      });
      const watched = new Promise<number | null>((resolve) => watch.once('exit', (code) => resolve(code)));
      const until = Date.now() + 10_000;
      while (!lines.includes('petrel-canary quick') && Date.now() < until)
        await new Promise((r) => setTimeout(r, 50));
      watch.kill('SIGINT');
      expect(await watched).toBe(0);
      expect(lines).toContain('petrel-canary quick');
      const info = petrel(['info', 'hello', '--json', ...run]);
      expect(info.status, info.stderr).toBe(0);
      expect(info.stdout).toContain('hello');
      const node = petrel(['node', 'info', '--json', ...run]);
      expect(node.status, node.stderr).toBe(0);
      expect(JSON.parse(node.stdout).canaries.length).toBeGreaterThan(0);
      expect(petrel(['destroy', 'hello', ...run]).status).toBe(0);
    } finally {
      // `ip netns exec` and the script both exec: this pid is petreld's.
      daemon.kill('SIGTERM');
      await exited;
      netns.destroy();
      await rm(home, { recursive: true, force: true });
    }
  }, 60_000);
});
