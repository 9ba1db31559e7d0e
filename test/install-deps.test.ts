// scripts/install-deps.sh on a machine that lacks everything, played with a stub apt-get that
// records what it is asked for (TEST DOUBLE: no package is installed): petreld's own needs by
// default, and what only the tests need with --tests, never the other way round.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { repo } from './repo.js';

const script = path.join(repo, 'scripts', 'install-deps.sh');
const dir = mkdtempSync(path.join(tmpdir(), 'petrel-deps-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const PETRELD = ['gcc', 'g++', 'make', 'linux-libc-dev', 'libc6-dev', 'binutils', 'iproute2', 'util-linux'];
const TESTS_ONLY = ['openssl', 'time', 'systemd', 'lintian', 'chromium'];

/** What the stub apt-get was asked to install, on a PATH with nothing but the stub and `id`. */
function requested(args: readonly string[]): { status: number | null; packages: string[]; stderr: string } {
  const bin = mkdtempSync(path.join(dir, 'bin-'));
  const calls = path.join(bin, 'calls');
  writeFileSync(path.join(bin, 'apt-get'), `#!/bin/bash\necho "$*" >> '${calls}'\n`);
  chmodSync(path.join(bin, 'apt-get'), 0o755);
  symlinkSync('/usr/bin/id', path.join(bin, 'id'));
  // An empty root: every file the script looks for is missing there too.
  const root = mkdtempSync(path.join(dir, 'root-'));
  const r = spawnSync('/bin/bash', [script, ...args], {
    env: { PATH: bin, PETREL_DEPS_ROOT: root },
    encoding: 'utf8',
  });
  const lines = (() => {
    try {
      return readFileSync(calls, 'utf8').trim().split('\n');
    } catch {
      return [];
    }
  })();
  const install = lines.find((l) => l.startsWith('install ')) ?? '';
  return {
    status: r.status,
    packages: install.split(' ').filter((w) => w !== '' && !w.startsWith('-') && w !== 'install'),
    stderr: r.stderr,
  };
}

describe('install-deps.sh (a stub apt-get stands in for Debian’s)', () => {
  it('asks for what petreld needs to build and run, and for no test-only package', () => {
    const r = requested([]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.packages.sort()).toEqual([...PETRELD].sort());
  });

  it('--tests adds what only the tests need', () => {
    const r = requested(['--tests']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.packages.sort()).toEqual([...PETRELD, ...TESTS_ONLY].sort());
  });

  it('refuses an unknown option, naming it, and installs nothing', () => {
    const r = requested(['--test']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('unknown option --test');
    expect(r.packages).toEqual([]);
  });
});
