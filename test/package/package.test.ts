// The Debian package on this host, as CI runs it (issue 25): root, no systemd as PID 1. Builds
// the package (npm run package's script) at two versions, installs with `dpkg -i
// --force-confold` beside a recording systemctl / deb-systemd-invoke (the TEST DOUBLE of
// systemd-standin.mjs, first on PATH), and checks what the maintainer scripts do: petreld starts
// and boots its canary, a unikernel runs and its console is read through /usr/bin/petrel; an
// upgrade restarts petreld alone and the guest keeps its tender and console; removal stops
// petreld and the guest runs on; purge stops the guest and leaves none of the package's files.
// Runs with CI=true or PETREL_TEST_PACKAGE=1 (it installs into /usr), and purges even on failure.
// The petreld it starts uses a run and state directory of its own, named in the configuration
// file the test puts at /etc/petrel/petreld.toml before installing (--force-confold keeps it).

import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tenderPids } from '../daemon/guests.js';
import { repo } from '../engine/guest.js';

const enabled = process.env.CI === 'true' || process.env.PETREL_TEST_PACKAGE === '1';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function run(command: string, args: readonly string[], env: NodeJS.ProcessEnv = process.env) {
  const done = spawnSync(command, args, { env, encoding: 'utf8', timeout: 120_000 });
  return { status: done.status, out: `${done.stdout ?? ''}${done.stderr ?? ''}` };
}
function must(command: string, args: readonly string[], env?: NodeJS.ProcessEnv): string {
  const done = run(command, args, env);
  if (done.status !== 0) throw new Error(`${command} ${args.join(' ')} exited ${done.status}:\n${done.out}`);
  return done.out;
}
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return !readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.startsWith('Z');
  } catch {
    return false;
  }
};
async function until(check: () => boolean, what: string, ms = 30_000): Promise<void> {
  for (const deadline = Date.now() + ms; !check(); await sleep(50)) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
  }
}
/** Median wall time of `/usr/bin/petrel info` and of `node -e 0`, 7 runs each (interleaved). */
function startupRatio(runDir: string): { petrel: number; node: number } {
  const time = (command: string, args: string[]) => {
    const start = process.hrtime.bigint();
    must(command, args);
    return Number(process.hrtime.bigint() - start) / 1e6;
  };
  const petrel: number[] = [];
  const node: number[] = [];
  for (let i = 0; i < 7; i++) {
    petrel.push(time('/usr/bin/petrel', ['info', '--run-dir', runDir]));
    node.push(time(process.execPath, ['-e', '0']));
  }
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[3] as number;
  return { petrel: median(petrel), node: median(node) };
}
const installed = (): boolean =>
  // biome-ignore lint/suspicious/noTemplateCurlyInString: dpkg-query's format, not a template
  run('dpkg-query', ['-W', '-f=${Status}', 'petrel']).out.includes(' installed');

describe.skipIf(!enabled)('the Debian package', () => {
  it('installs and starts petreld, upgrades with the guest running, removes, purges', async () => {
    expect(process.getuid?.()).toBe(0);
    if (installed())
      throw new Error('a petrel package is installed on this host: this test installs and purges its own');
    for (const own of ['/etc/petrel', '/var/lib/petrel']) {
      if (existsSync(own)) throw new Error(`${own} exists: this test would remove it when it purges`);
    }
    const hadUser = run('getent', ['passwd', 'petrel']).status === 0;
    const hadGroup = run('getent', ['group', 'petrel']).status === 0;
    const dir = await mkdtemp(path.join(tmpdir(), 'petrel-pkg-'));
    const standin = path.join(dir, 'standin');
    const bin = path.join(dir, 'bin');
    const runDir = path.join(dir, 'run');
    mkdirSync(standin);
    mkdirSync(bin);
    copyFileSync(path.join(repo, 'test/package/systemd-standin.mjs'), path.join(bin, 'standin.mjs'));
    await chmod(path.join(bin, 'standin.mjs'), 0o755);
    for (const name of ['systemctl', 'deb-systemd-invoke']) symlinkSync('standin.mjs', path.join(bin, name));
    const env = { ...process.env, PATH: `${bin}:${process.env.PATH}`, PETREL_STANDIN_DIR: standin };
    const calls = () => (existsSync(`${standin}/calls`) ? readFileSync(`${standin}/calls`, 'utf8') : '');
    const log = () => readFileSync(`${standin}/petreld.service.log`, 'utf8');
    const daemonPid = () => Number(readFileSync(`${standin}/petreld.service.pid`, 'utf8'));
    const tag = randomBytes(3).toString('hex');
    const [v1, v2] = [`0.0.1~pkgtest${tag}.1`, `0.0.1~pkgtest${tag}.2`];
    const petrel = (...args: string[]) => must('/usr/bin/petrel', [...args, '--run-dir', runDir]);
    const history = (name: string) =>
      petrel('console', name, '--no-follow', '--count', '1024')
        .split('\n')
        .filter((l) => l.includes(' petrel-canary count '))
        .map((l) => l.slice(l.indexOf(' ') + 1));
    try {
      // --- build: the script of `npm run package`, then the same tree repacked as v2 ----------
      const built = Date.now();
      const deb1 = must('bash', [path.join(repo, 'scripts/package.sh')], {
        ...process.env,
        PETREL_VERSION: v1,
        PETREL_PACKAGE_OUT: `${dir}/out`,
      }).trim();
      const buildMs = Date.now() - built;
      expect(path.basename(deb1)).toBe(`petrel_${v1}_${must('dpkg', ['--print-architecture']).trim()}.deb`);
      const tree = `${dir}/v2`;
      must('dpkg-deb', ['-R', deb1, tree]);
      for (const file of [`${tree}/DEBIAN/control`, `${tree}/usr/lib/petrel/package.json`]) {
        writeFileSync(file, readFileSync(file, 'utf8').replace(v1, v2));
      }
      const deb2 = `${dir}/out/petrel_${v2}.deb`;
      must('dpkg-deb', ['--root-owner-group', '-b', tree, deb2]);
      expect(must('dpkg-deb', ['-f', deb1, 'Depends'])).toContain('nodejs (>= 20.10~), nodejs (<< 21~)');
      const contents = must('dpkg-deb', ['-c', deb1]);
      for (const file of [
        './usr/bin/petrel -> ../lib/petrel/dist/src/cli/petrel.cjs',
        './usr/sbin/petreld -> ../lib/petrel/dist/src/cli/petreld.js',
        './lib/systemd/system/petreld.service',
        './lib/systemd/system/petrel-tls.service',
        './usr/lib/petrel/native/build/petrel-holder',
        './usr/share/doc/petrel/copyright',
        './usr/share/doc/petrel/changelog.Debian.gz',
      ]) {
        expect(contents).toContain(file);
      }
      expect(must('dpkg-deb', ['-I', deb1, 'conffiles']).trim()).toBe('/etc/petrel/petreld.toml');
      // The conffile cannot know each host's probe: it hosts what the probe allows.
      expect(readFileSync(`${tree}/etc/petrel/petreld.toml`, 'utf8')).toMatch(/^runtimes = "auto"$/mu);
      // lintian: no error; the overrides (commented in the package) only for the canary images. --show-overrides makes lintian exit 2 whatever it finds, so
      // its lines are what counts.
      const lint = run('lintian', ['--show-overrides', deb1]);
      if (lint.status === null)
        throw new Error('lintian is not installed (scripts/install-deps.sh --tests installs it)');
      const lines = lint.out
        .split('\n')
        .filter((l) => l !== '' && !l.startsWith('running with root privileges'));
      expect(
        lines.filter((l) => !/^[EWINOP]: petrel: |^N:/u.test(l)),
        'lintian failed to run',
      ).toEqual([]);
      expect(lines.filter((l) => l.startsWith('E: '))).toEqual([]);
      const overridden = lines.filter((l) => l.startsWith('O: '));
      expect(overridden.length).toBeGreaterThan(0);
      for (const l of overridden)
        expect(l).toMatch(/\[usr\/lib\/petrel\/native\/build\/(canary[\w-]*\.(hvt|spt)|sse\.hvt)\]$/u);

      // --- install: our configuration kept, petreld started, its canary booted -----------------
      // First with a configuration whose preflight fails: the installation still succeeds, and
      // says what is missing.
      mkdirSync('/etc/petrel');
      const config = `stateDir = "${dir}/state"\nrunDir = "${runDir}"\nlogLevel = "info"\n`;
      writeFileSync('/etc/petrel/petreld.toml', `${config}runtimes = ["hvt"]\nkvmDevice = "${dir}/no-kvm"\n`);
      const installing = Date.now();
      const first = run('dpkg', ['-i', '--force-confold', deb1], env);
      const installMs = Date.now() - installing;
      expect(first.status, first.out).toBe(0);
      expect(calls()).toContain('deb-systemd-invoke start petreld.service');
      expect(first.out).toContain('petrel: petreld did not start; its preflight');
      expect(first.out).toMatch(new RegExp(`kvm +FAIL +yes +.*${dir}/no-kvm`, 'u'));
      expect(existsSync(`${standin}/petreld.service.pid`)).toBe(false);
      // Fixed as an operator would (the conffile's own value: on this device no hvt, so spt),
      // then started as systemctl would.
      writeFileSync('/etc/petrel/petreld.toml', `${config}runtimes = "auto"\nkvmDevice = "${dir}/no-kvm"\n`);
      must('deb-systemd-invoke', ['start', 'petreld.service'], env);
      expect(readFileSync('/etc/petrel/petreld.toml', 'utf8')).toContain(`runDir = "${runDir}"`);
      expect(run('getent', ['passwd', 'petrel']).out).toMatch(/^petrel:x:(\d{3}):\d+:/u);
      const uid = Number(run('id', ['-u', 'petrel']).out);
      expect(uid < 65536 || uid > 99999).toBe(true);
      expect(must('stat', ['-c', '%a %U', '/var/lib/petrel']).trim()).toBe('700 root');
      // Enabled for the next boot (deb-systemd-helper, of the essential init-system-helpers).
      expect(existsSync('/etc/systemd/system/multi-user.target.wants/petreld.service')).toBe(true);
      must('/usr/sbin/petreld', ['check', '--config', '/etc/petrel/petreld.toml']);
      await until(() => log().includes('"msg":"petreld ready"'), 'petreld ready');
      expect(log()).toContain('"msg":"boot canary ran"');
      expect(log()).toMatch(/"runtimes":\["spt"\].*"msg":"petreld ready"/u);
      const verify = run('systemd-analyze', ['verify', 'petreld.service', 'petrel-tls.service']);
      expect(verify, verify.out).toMatchObject({ status: 0 });

      // --- a guest, its console read through /usr/bin/petrel -------------------------------------
      petrel(
        'create',
        'pkgvm',
        '/usr/lib/petrel/native/build/canary.spt',
        '--mem',
        '16',
        '--arg',
        'count',
        '--arg',
        '50',
      );
      await until(() => history('pkgvm').length >= 5, 'five console lines');
      const [tender, ...others] = Object.values(await tenderPids(runDir));
      expect(others).toEqual([]);
      const before = history('pkgvm');
      const startup = startupRatio(runDir);
      const firstDaemon = daemonPid();

      // --- upgrade: petreld restarted alone, the guest keeps its tender and its history -------
      const callsBefore = calls().length;
      must('dpkg', ['-i', '--force-confold', deb2], env);
      const upgradeCalls = calls().slice(callsBefore);
      expect(upgradeCalls).toContain('deb-systemd-invoke restart petreld.service');
      expect(upgradeCalls).not.toContain('stop');
      expect(daemonPid()).not.toBe(firstDaemon);
      expect(alive(firstDaemon)).toBe(false);
      await until(() => log().split('"msg":"petreld ready"').length === 3, 'the new petreld ready');
      const ready = log()
        .split('\n')
        .filter((l) => l.includes('"msg":"petreld ready"'))
        .map((l) => JSON.parse(l) as { adopted: number });
      expect(ready.at(-1)?.adopted).toBe(1);
      expect(Object.values(await tenderPids(runDir))).toEqual([tender]);
      const after = history('pkgvm');
      for (const line of before) expect(after).toContain(line);
      expect(after.length).toBeGreaterThan(before.length);

      // --- remove: petreld stops, the guest runs on, the configuration stays --------------------
      const secondDaemon = daemonPid();
      must('dpkg', ['-r', 'petrel'], env);
      expect(calls()).toContain('deb-systemd-invoke stop petrel-tls.service petreld.service');
      expect(alive(secondDaemon)).toBe(false);
      expect(alive(tender as number)).toBe(true);
      expect(existsSync('/usr/lib/petrel')).toBe(false);
      expect(existsSync('/etc/petrel/petreld.toml')).toBe(true);

      // --- purge: the guest stopped, the package's files gone; pki and state kept by default --
      mkdirSync('/etc/petrel/pki');
      writeFileSync('/etc/petrel/pki/marker', 'kept');
      const purged = must('dpkg', ['--purge', 'petrel'], env);
      // Stopped as petreld's SIGUSR2 stops guests: SIGTERM first, and it was enough.
      expect(purged, purged).toContain(`petrel: unikernel :pkgvm (pid ${tender}) stopped by SIGTERM`);
      expect(alive(tender as number)).toBe(false);
      expect(existsSync(runDir)).toBe(false);
      expect(existsSync('/etc/petrel/petreld.toml')).toBe(false);
      expect(readFileSync('/etc/petrel/pki/marker', 'utf8')).toBe('kept');
      expect(existsSync('/var/lib/petrel')).toBe(true);
      expect(installed()).toBe(false);
      for (const line of contents.split('\n')) {
        const file = /^\S+ \S+ +\d+ \S+ \S+ \.(\/\S*?)(?: -> .*)?$/u.exec(line)?.[1];
        if (file === undefined || file.endsWith('/')) continue;
        expect(existsSync(file), file).toBe(false);
      }
      for (const left of [
        '/etc/systemd/system/multi-user.target.wants/petreld.service',
        '/var/lib/systemd/deb-systemd-helper-enabled/petreld.service.dsh-also',
      ]) {
        expect(existsSync(left), left).toBe(false);
      }
      // PETREL_PURGE_STATE=1: the same postrm takes pki and the state too.
      must(`${tree}/DEBIAN/postrm`, ['purge'], { ...env, PETREL_PURGE_STATE: '1' });
      expect(existsSync('/etc/petrel')).toBe(false);
      expect(existsSync('/var/lib/petrel')).toBe(false);

      const size = Number(must('stat', ['-c', '%s', deb1]));
      console.log(
        `package: ${(size / 1024 / 1024).toFixed(1)} MiB, built in ${(buildMs / 1000).toFixed(1)} s, installed in ${(installMs / 1000).toFixed(1)} s; ` +
          `/usr/bin/petrel info start-up ${startup.petrel.toFixed(0)} ms ÷ node -e 0 ${startup.node.toFixed(0)} ms = ${(startup.petrel / startup.node).toFixed(2)} (a shared machine)`,
      );
    } finally {
      if (installed() || run('dpkg-query', ['-W', 'petrel']).status === 0) {
        run('dpkg', ['--purge', 'petrel'], { ...env, PETREL_PURGE_STATE: '1' });
      }
      if (existsSync(`${standin}/petreld.service.pid`) && alive(daemonPid()))
        process.kill(daemonPid(), 'SIGKILL');
      await rm('/etc/petrel', { recursive: true, force: true });
      await rm('/var/lib/petrel', { recursive: true, force: true });
      if (!hadUser) run('userdel', ['petrel']);
      if (!hadGroup) run('groupdel', ['petrel']);
      await rm(dir, { recursive: true, force: true });
    }
  }, 240_000);
});
