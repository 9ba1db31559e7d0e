// `petrel` on PATH from a source tree (issue 25, item 4): `npm link`, as the README and the
// quickstart do it, with npm's prefix in a temporary directory so the machine's own bin
// directory is untouched; the linked commands run this tree's build.
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { repo } from '../engine/guest.js';

let prefix: string;
beforeAll(async () => {
  prefix = await mkdtemp(path.join(tmpdir(), 'petrel-link-'));
});
afterAll(() => rm(prefix, { recursive: true, force: true }));

it('npm link puts petrel and petreld on PATH, running this tree', async () => {
  const env = { ...process.env, npm_config_prefix: prefix, PATH: `${prefix}/bin:${process.env.PATH}` };
  const linked = spawnSync('npm', ['link', '--no-audit', '--no-fund'], { cwd: repo, env, encoding: 'utf8' });
  expect(linked.status, linked.stderr).toBe(0);
  expect(await realpath(path.join(prefix, 'bin', 'petrel'))).toBe(
    path.join(repo, 'dist', 'src', 'cli', 'petrel.cjs'),
  );
  // Found by name on PATH, as a user types it.
  const help = spawnSync('petrel', ['console', '--help'], { env, encoding: 'utf8' });
  expect(help.status, help.stderr).toBe(0);
  expect(help.stdout).toContain('--no-follow');
  const daemon = spawnSync('petreld', ['--help'], { env, encoding: 'utf8' });
  expect(daemon.status, daemon.stderr).toBe(0);
  expect(daemon.stdout).toMatch(/^usage: petreld /u);
  // The README says so, and no longer sets an alias.
  const readme = await readFile(path.join(repo, 'README.md'), 'utf8');
  expect(readme).toMatch(/^npm link +# once: petrel and petreld on PATH/mu);
  expect(readme).not.toContain('alias petrel=');
});
