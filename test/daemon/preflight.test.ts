// Preflight on real probes of this host: for each missing capability the report says so and the
// start-up error names it with a fix; what is fatal follows the configured runtimes only.

import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, chown, lstat, mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { buildConfig, type ConfigKey, type PetrelConfig } from '../../src/daemon/config.js';
import {
  type CheckResult,
  checkHost,
  fatalFailures,
  formatChecks,
  hostedRuntimes,
  preflight,
  preflightError,
  probeOptions,
  requiredChecks,
} from '../../src/daemon/preflight.js';
import { processesInRange } from '../../src/host/jail.js';
import {
  bundledKvmProbePath,
  type CapabilityReport,
  type ProbeOptions,
  probeHost,
} from '../../src/tender/probe.js';
import { netnsEachTest, tempDirEachTest } from '../host/helpers.js';
import { until } from '../stats/helpers.js';
import { writeFakeTender } from '../tender/fake-tender.js';

const isRoot = process.getuid?.() === 0;
const helper = bundledKvmProbePath();
const helperBuilt = helper !== null && existsSync(helper);
const hasOpenssl = (() => {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

const KVM_HINT = 'is the kvm module loaded? is this a VM without nested virtualisation?';

let dir: string;
tempDirEachTest((made) => {
  dir = made;
});

function config(flags: Partial<Record<ConfigKey, string>> = {}): PetrelConfig {
  const built = buildConfig({
    flags: {
      stateDir: path.join(dir, 'state'),
      runDir: path.join(dir, 'run'),
      kvmDevice: path.join(dir, 'kvm'),
      // Letters only: parallel probes in the host's namespace never share a probe tap.
      tapPrefix: `t${randomBytes(3)
        .toString('hex')
        .replace(/\d/gu, (d) => 'ghijklmnop'[Number(d)] ?? 'x')}`,
      ...flags,
    },
  });
  if (!built.ok) throw new Error(built.error.message);
  return built.value;
}

/** Sees only the test's files: no tenders from PATH, no bundled tender. */
function probe(cfg: PetrelConfig, extra: Partial<ProbeOptions> = {}): Promise<CapabilityReport> {
  return probeHost(probeOptions(cfg, { searchPath: '', bundledHvt: null, bundledSpt: null, ...extra }));
}

/** A stand-in for the kvm-probe helper on a host with KVM (this one has none): answers API 12. */
async function kvmPresent(): Promise<string> {
  const fake = path.join(dir, 'fake-kvm-probe');
  await writeFile(fake, "#!/bin/sh\necho 'api 12'\n");
  await chmod(fake, 0o755);
  return fake;
}

/** A fake solo5-hvt (test/tender/fake-tender.ts: this machine cannot install solo5) in the state dir. */
async function hvtTender(cfg: PetrelConfig, abi = '2'): Promise<string> {
  await mkdir(cfg.stateDir, { recursive: true });
  const file = path.join(cfg.stateDir, 'solo5-hvt');
  await writeFakeTender(file, { abi });
  return file;
}

const byName = (results: readonly CheckResult[], name: string): CheckResult | undefined =>
  results.find((r) => r.name === name);

describe('fatal checks are declared by the configuration', () => {
  it('hvt needs kvm and an hvt tender; spt an spt tender; none nothing', () => {
    const always = ['spawner', 'holder', 'stateDir', 'runDir', 'sockets', 'jail', 'jail.ids'];
    expect([...requiredChecks(config())].sort()).toEqual(['kvm', 'tenders.hvt', ...always].sort());
    // Unjailed, the jail is no requirement (preflight warns instead).
    expect([...requiredChecks(config({ jail: 'false' }))]).not.toContain('jail');
    expect([...requiredChecks(config({ runtimes: 'spt' }))].sort()).toEqual(
      ['tenders.spt', ...always].sort(),
    );
    expect([
      ...requiredChecks(
        config({
          runtimes: 'none',
          bridges: 'br0',
          tlsListen: '1025',
          tlsCa: 'a',
          tlsCert: 'b',
          tlsKey: 'c',
        }),
      ),
    ]).toEqual([]);
    expect([...requiredChecks(config({ bridges: 'br0,br1' }))]).toEqual(
      expect.arrayContaining(['bridges.br0', 'bridges.br1', 'tun', 'netAdmin']),
    );
  });
});

describe('kvm', () => {
  it.skipIf(!helperBuilt)(
    'a missing device: absent in the report, fatal for hvt with the reason and a hint',
    async () => {
      const cfg = config();
      await hvtTender(cfg);
      const report = await probe(cfg);
      expect(report.kvm).toBe(false);
      const results = await preflight(cfg, report);
      expect(fatalFailures(results)).toEqual([
        `kvm: ${dir}/kvm cannot be opened: No such file or directory (${KVM_HINT})`,
      ]);
      expect(preflightError(results)?.message).toBe(
        `preflight failed:\n  kvm: ${dir}/kvm cannot be opened: No such file or directory (${KVM_HINT})`,
      );
    },
  );

  // A device node on a tmpfs mounted nodev: it exists, yet even root cannot open it.
  it.skipIf(!helperBuilt || !isRoot)('a device that exists but cannot be opened', async () => {
    const mnt = path.join(dir, 'nodev');
    await mkdir(mnt);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'nodev,size=64k', 'petrel-test', mnt]);
    try {
      const device = path.join(mnt, 'kvm');
      execFileSync('mknod', [device, 'c', '10', '232']);
      expect((await lstat(device)).isCharacterDevice()).toBe(true);
      const cfg = config({ kvmDevice: device });
      await hvtTender(cfg);
      const report = await probe(cfg);
      expect(report.kvm).toBe(false);
      expect(fatalFailures(await preflight(cfg, report))).toEqual([
        `kvm: ${device} cannot be opened: Permission denied (run petreld as root or in the group owning the device; a device on a file system mounted nodev cannot be opened)`,
      ]);
    } finally {
      execFileSync('umount', [mnt]);
    }
  });
});

describe('tenders', () => {
  it('a missing hvt tender is fatal for hvt, naming every place looked at', async () => {
    const cfg = config();
    const report = await probe(cfg, { kvmProbe: await kvmPresent() });
    expect(report.tenders).toEqual([]);
    const s = cfg.stateDir;
    expect(fatalFailures(await preflight(cfg, report))).toEqual([
      `tenders.hvt: tender does not exist, looked for ${s}/solo5-hvt.2, solo5-hvt.2, ${s}/solo5-hvt, solo5-hvt (install solo5-hvt, build the bundled tender with \`make -C native\`, or point --tender-hvt at one)`,
    ]);
  });

  it("a tender whose --version has the wrong ABI line is fatal with Albatross' text", async () => {
    const cfg = config();
    const tender = await hvtTender(cfg, '3');
    const report = await probe(cfg, { kvmProbe: await kvmPresent() });
    expect(report.tenders).toEqual([
      { kind: 'hvt', path: tender, version: 'solo5-hvt tender, version v0.12.1', abi: 3 },
    ]);
    const results = await preflight(cfg, report);
    expect(formatChecks(results)).toMatch(
      /^tenders\.hvt +FAIL +yes +\/.*got solo5-hvt tender, version v0\.12\.1\n {35}ABI version 3$/mu,
    );
    expect(fatalFailures(results)).toEqual([
      `tenders.hvt: ${tender}: unexpected solo5 tender --version output, expected one line with 'ABI version 2', got solo5-hvt tender, version v0.12.1\nABI version 3 (install a solo5-hvt tender of ABI version 2, or point --tender-hvt at one)`,
    ]);
  });

  it('a tender lost between two probes passes the first preflight and fails the second', async () => {
    const cfg = config();
    const tender = await hvtTender(cfg);
    const kvmProbe = await kvmPresent();
    expect(fatalFailures(await preflight(cfg, await probe(cfg, { kvmProbe })))).toEqual([]);
    await rm(tender);
    const failures = fatalFailures(await preflight(cfg, await probe(cfg, { kvmProbe })));
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatch(/^tenders\.hvt: tender does not exist/u);
  });

  it('free space of the state directory below stateMinFree is a WARN, never fatal', async () => {
    const cfg = config({ runtimes: 'spt', stateMinFree: String(Number.MAX_SAFE_INTEGER) });
    const results = await preflight(cfg, await probe(cfg, { kvmProbe: null }));
    expect(byName(results, 'stateFree')).toMatchObject({ status: 'WARN', fatal: false });
    expect(byName(results, 'stateFree')?.detail).toMatch(
      new RegExp(`^\\d+ bytes free in ${cfg.stateDir}, below stateMinFree`, 'u'),
    );
    const roomy = config({ runtimes: 'spt', stateMinFree: '0' });
    const passing = await preflight(roomy, await probe(roomy, { kvmProbe: null }));
    expect(byName(passing, 'stateFree')).toMatchObject({ status: 'PASS' });
  });

  it('spt needs only an spt tender: missing kvm is then a warning', async () => {
    const cfg = config({ runtimes: 'spt' });
    const report = await probe(cfg, { kvmProbe: null });
    const results = await preflight(cfg, report);
    expect(byName(results, 'kvm')).toMatchObject({ status: 'WARN', fatal: false });
    expect(fatalFailures(results)).toEqual([
      expect.stringMatching(/^tenders\.spt: tender does not exist, looked for /u),
    ]);
  });
});

describe('a host where everything required is there', () => {
  it('passes, and the table shows every check with its status', async () => {
    const cfg = config();
    await hvtTender(cfg);
    const report = await probe(cfg, { kvmProbe: await kvmPresent() });
    const results = await preflight(cfg, report);
    expect(fatalFailures(results)).toEqual([]);
    expect(preflightError(results)).toBeNull();
    for (const name of [
      'kvm',
      'tenders.hvt',
      'spawner',
      'holder',
      'stateDir',
      'runDir',
      'sockets',
      'cpus',
      'memoryMiB',
      'blockStorageMiB',
      'jail',
      'jail.ids',
    ]) {
      expect(byName(results, name)?.status).toBe('PASS');
    }
    expect(byName(results, 'jail')?.detail).toMatch(/jailed as uid (\d+) gid \1 in its own mount/u);
    expect(byName(results, 'tenders.spt')).toMatchObject({ status: 'WARN', fatal: false });
    const table = formatChecks(results);
    expect(table.split('\n')[0]).toMatch(/^CHECK\s+STATUS\s+REQUIRED\s+DETAIL$/u);
    expect(table).toMatch(/^kvm\s+PASS\s+yes\s+.*opened, KVM API version 12$/mu);
    expect(table).toMatch(/^tenders\.spt\s+WARN\s+no\s+tender does not exist/mu);
    expect(table).toMatch(/^\s+fix: install solo5-spt, build the bundled tender with/mu);
  });

  it('checkHost probes and checks in one call', async () => {
    const cfg = config();
    await hvtTender(cfg);
    const { report, results } = await checkHost(cfg, {
      probe: { searchPath: '', bundledHvt: null, bundledSpt: null, kvmProbe: await kvmPresent() },
    });
    expect(report.kvm).toBe(true);
    expect(fatalFailures(results)).toEqual([]);
  });
});

describe.skipIf(!isRoot)('the jail', () => {
  it('off: a warning that names it, nothing required', async () => {
    const cfg = config({ jail: 'false' });
    const results = await preflight(cfg, await probe(cfg));
    expect(byName(results, 'jail')).toMatchObject({
      status: 'WARN',
      fatal: false,
      detail: expect.stringContaining('tenders run unjailed'),
    });
    expect(byName(results, 'jail.ids')).toBeUndefined();
  });

  it('a process under an id of the range that no petreld recorded or claimed is fatal, named', async () => {
    // Outside the default range, so that no other test's petreld meets this stranger.
    const id = 1_900_000_000 + (process.pid % 900);
    const stranger = spawn('sleep', ['30'], { uid: id, gid: id, stdio: 'ignore' });
    try {
      await new Promise((r) => setTimeout(r, 200));
      const cfg = config({ jailIds: `${id - 10}-${id + 10}` });
      const results = await preflight(cfg, await probe(cfg));
      expect(byName(results, 'jail.ids')).toMatchObject({
        status: 'FAIL',
        fatal: true,
        detail: expect.stringContaining(
          `process ${stranger.pid} (sleep, parent ${process.pid}) runs as id ${id}`,
        ),
        fix: 'choose another jailIds range',
      });
      expect(preflightError(results)?.message).toContain('jail.ids: the jail ids');
    } finally {
      stranger.kill('SIGKILL');
    }
  });

  it('a process under an id of the range that goes within the grace (a tender dying with its killed holder) is no stranger', async () => {
    const id = 1_900_000_000 + (process.pid % 900) + 1000;
    // Lives 1 s: as a tender whose holder was SIGKILLed lives on while its guest's memory goes.
    const dying = spawn('sleep', ['1'], { uid: id, gid: id, stdio: 'ignore' });
    const gone = new Promise((resolve) => dying.once('exit', resolve));
    try {
      await new Promise((r) => setTimeout(r, 200));
      const cfg = config({ jailIds: `${id - 10}-${id + 10}` });
      const started = Date.now();
      const results = await preflight(cfg, await probe(cfg));
      expect(byName(results, 'jail.ids')).toMatchObject({ status: 'PASS' });
      // It waited for the process to go, no longer than the grace.
      expect(Date.now() - started).toBeGreaterThanOrEqual(500);
      await gone;
    } finally {
      dying.kill('SIGKILL');
    }
  });

  it('a zombie under an id of the range (a dead tender its new parent has yet to reap) is no stranger', async () => {
    const id = 1_900_000_000 + (process.pid % 900) + 2000;
    // A root parent that does not reap, for longer than the grace, and its child dead under the id.
    const parent = spawn(
      'perl',
      ['-e', `if (fork() == 0) { $( = $) = "${id} ${id}"; $< = $> = ${id}; exit 0 } sleep 8`],
      { stdio: 'ignore' },
    );
    try {
      await until(() => processesInRange({ first: id, last: id }).some((p) => p.zombie), 'the zombie');
      const cfg = config({ jailIds: `${id - 10}-${id + 10}` });
      const results = await preflight(cfg, await probe(cfg));
      expect(byName(results, 'jail.ids')).toMatchObject({ status: 'PASS' });
    } finally {
      parent.kill('SIGKILL');
    }
  });
});

describe('runtimes auto', () => {
  /** An spt tender the probe accepts (a fake one: its --version is all the probe runs). */
  async function sptTender(): Promise<string> {
    const file = path.join(dir, 'solo5-spt');
    await writeFakeTender(file);
    return file;
  }

  it('hosts what the probe allows: without KVM spt alone, the kvm row a warning that says why', async () => {
    const cfg = config({ runtimes: 'auto', tenderSpt: await sptTender() });
    await hvtTender(cfg);
    const results = await preflight(cfg, await probe(cfg, { kvmProbe: null }));
    expect(requiredChecks(cfg)).toContain('runtimes');
    expect(requiredChecks(cfg)).not.toContain('kvm');
    expect(byName(results, 'kvm')).toMatchObject({ status: 'WARN', fatal: false });
    expect(byName(results, 'runtimes')).toMatchObject({ status: 'PASS', fatal: true });
    expect(byName(results, 'runtimes')?.detail).toBe('auto: hosts spt (hvt left out: kvm WARN)');
    expect(hostedRuntimes(cfg, results)).toEqual(['spt']);
    expect(preflightError(results)).toBeNull();
  });

  it('with KVM and both tenders, both', async () => {
    const cfg = config({ runtimes: 'auto', tenderSpt: await sptTender() });
    await hvtTender(cfg);
    const results = await preflight(cfg, await probe(cfg, { kvmProbe: await kvmPresent() }));
    expect(byName(results, 'runtimes')?.detail).toBe('auto: hosts hvt, spt');
    expect(hostedRuntimes(cfg, results)).toEqual(['hvt', 'spt']);
  });

  it('a host that can run neither refuses to start, naming what each one lacks', async () => {
    const cfg = config({ runtimes: 'auto' });
    const results = await preflight(cfg, await probe(cfg, { kvmProbe: null }));
    expect(hostedRuntimes(cfg, results)).toEqual([]);
    expect(fatalFailures(results)).toEqual([
      'runtimes: auto: this host can run neither hvt nor spt unikernels (hvt left out: kvm WARN, tenders.hvt WARN; spt left out: tenders.spt WARN) (see the kvm and tenders rows above; or set runtimes = "none" to only probe and report)',
    ]);
  });

  it('a listed runtime is hosted as listed, whatever the probe says', async () => {
    const cfg = config({ runtimes: 'spt' });
    const results = await preflight(cfg, await probe(cfg, { kvmProbe: null }));
    expect(hostedRuntimes(cfg, results)).toEqual(['spt']);
    expect(byName(results, 'runtimes')).toBeUndefined();
  });
});

describe('runtimes none', () => {
  it('hosts nothing, so nothing is fatal, whatever is missing', async () => {
    const cfg = config({
      runtimes: 'none',
      bridges: 'petrelnobr0',
      runDir: path.join(dir, 'x'.repeat(120)),
      tlsListen: '1025',
      tlsCa: path.join(dir, 'no-ca.pem'),
      tlsCert: path.join(dir, 'no-cert.pem'),
      tlsKey: path.join(dir, 'no-key.pem'),
    });
    const results = await preflight(
      cfg,
      await probe(cfg, { kvmProbe: null, tunDevice: path.join(dir, 'tun') }),
    );
    expect(results.every((r) => !r.fatal && r.status !== 'FAIL')).toBe(true);
    expect(fatalFailures(results)).toEqual([]);
    for (const name of ['kvm', 'tenders.hvt', 'tun', 'bridges.petrelnobr0', 'sockets', 'tls']) {
      expect(byName(results, name)?.status).toBe('WARN');
    }
  });
});

describe('directories and sockets', () => {
  it('creates missing state and run directories with mode 0700', async () => {
    const cfg = config();
    const results = await preflight(cfg, await probe(cfg, { kvmProbe: null }));
    for (const [name, dirPath] of [
      ['stateDir', cfg.stateDir],
      ['runDir', cfg.runDir],
    ] as const) {
      expect(byName(results, name)).toMatchObject({ status: 'PASS', fatal: true });
      expect(byName(results, name)?.detail).toContain('created (mode 0700)');
      expect((await lstat(dirPath)).mode & 0o777).toBe(0o700);
    }
  });

  it('a symbolic link, a file, or a directory owned by someone else is fatal', async () => {
    const real = path.join(dir, 'real');
    await mkdir(real);
    await symlink(real, path.join(dir, 'link'));
    await writeFile(path.join(dir, 'file'), '');
    const cfg = config({ runDir: path.join(dir, 'link'), stateDir: path.join(dir, 'file') });
    const failures = fatalFailures(await preflight(cfg, await probe(cfg, { kvmProbe: await kvmPresent() })));
    expect(failures).toContain(
      `runDir: ${dir}/link is a symbolic link (give the real directory as --run-dir)`,
    );
    expect(failures).toContain(`stateDir: ${dir}/file is not a directory (choose another --state-dir)`);
    if (isRoot) {
      await chown(real, 4321, 4321);
      const other = config({ runDir: real });
      expect(
        fatalFailures(await preflight(other, await probe(other, { kvmProbe: await kvmPresent() }))),
      ).toContain(`runDir: ${real} is owned by uid 4321, petreld runs as uid 0 (chown 0 ${real})`);
    }
  });

  it('a run directory whose longest socket path does not fit sun_path is fatal', async () => {
    // <dir>/<long>/util/console.sock: 108 bytes or more, one more than sun_path can hold.
    const filler = 'r'.repeat(108 - `${dir}//util/console.sock`.length);
    const cfg = config({ runDir: path.join(dir, filler) });
    const longest = path.join(dir, filler, 'util', 'console.sock');
    expect(Buffer.byteLength(longest)).toBe(108);
    const failures = fatalFailures(await preflight(cfg, await probe(cfg, { kvmProbe: await kvmPresent() })));
    expect(failures).toContain(
      `sockets: ${longest} is 108 bytes, a unix socket path may have at most 107 (choose a shorter --run-dir)`,
    );
    const fits = config({ runDir: path.join(dir, filler.slice(1)) });
    const results = await preflight(fits, await probe(fits, { kvmProbe: await kvmPresent() }));
    expect(byName(results, 'sockets')?.status).toBe('PASS');
  });
});

// Bridges in a network namespace this test makes and always deletes.
describe.skipIf(!isRoot)('bridges', () => {
  let netns: string;
  netnsEachTest(
    'petrel-pre',
    ['link add br0 type bridge', 'link set dev br0 up', 'link add br1 type bridge'],
    (made) => {
      netns = made;
    },
  );

  it('a configured bridge that is missing is fatal with the Albatross text; a down one warns', async () => {
    const cfg = config({ bridges: 'br0,br1,br9' });
    await hvtTender(cfg);
    const report = await probe(cfg, { kvmProbe: await kvmPresent(), netns });
    expect(report.bridges.map((b) => b.name)).toEqual(['br0', 'br1']);
    const results = await preflight(cfg, report);
    expect(fatalFailures(results)).toEqual([
      'bridges.br9: interface br9 does not exist (create the bridge (ip link add br9 type bridge) or remove it from bridges)',
    ]);
    expect(byName(results, 'bridges.br0')).toMatchObject({ status: 'PASS', fatal: true });
    expect(byName(results, 'bridges.br1')).toMatchObject({
      status: 'WARN',
      fatal: true,
      detail: 'bridge br1 exists but is down',
    });
    expect(byName(results, 'netAdmin')).toMatchObject({ status: 'PASS', fatal: true });
    expect(byName(results, 'tun')).toMatchObject({ status: 'PASS', fatal: true });
  });
});

describe.skipIf(!hasOpenssl)(
  hasOpenssl ? 'tls' : 'tls (skipped: openssl is missing; scripts/install-deps.sh --tests installs it)',
  () => {
    const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
    const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];

    function makeCa(name: string): void {
      openssl(
        'req',
        '-x509',
        ...ec,
        '-keyout',
        `${name}.key`,
        '-out',
        `${name}.pem`,
        '-days',
        '3650',
        '-subj',
        `/CN=${name}`,
        '-addext',
        'basicConstraints=critical,CA:TRUE',
      );
    }
    function makeServer(name: string, ca: string, days: number): void {
      openssl('req', '-new', ...ec, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`);
      openssl(
        'x509',
        '-req',
        '-in',
        `${name}.csr`,
        '-CA',
        `${ca}.pem`,
        '-CAkey',
        `${ca}.key`,
        '-out',
        `${name}.pem`,
        '-days',
        String(days),
      );
    }
    function tls(cert: string, key: string, ca = 'ca'): PetrelConfig {
      return config({
        tlsListen: '127.0.0.1:0',
        tlsCa: path.join(dir, `${ca}.pem`),
        tlsCert: path.join(dir, `${cert}.pem`),
        tlsKey: path.join(dir, `${key}.key`),
      });
    }
    async function tlsResult(cfg: PetrelConfig, now?: Date): Promise<CheckResult | undefined> {
      const report = await probe(cfg, { kvmProbe: await kvmPresent() });
      return byName(await preflight(cfg, report, now === undefined ? {} : { now }), 'tls');
    }

    beforeEach(() => {
      makeCa('ca');
      makeCa('other-ca');
      makeServer('server', 'ca', 365);
      makeServer('short', 'ca', 10);
    });

    it('CA, certificate and matching key pass', async () => {
      expect(await tlsResult(tls('server', 'server'))).toMatchObject({ status: 'PASS', fatal: true });
    });

    it('a key that does not match, a foreign CA, an expired or unreadable file is fatal', async () => {
      const d = dir;
      expect((await tlsResult(tls('server', 'short')))?.detail).toBe(
        `key ${d}/short.key does not match certificate ${d}/server.pem`,
      );
      expect((await tlsResult(tls('server', 'server', 'other-ca')))?.detail).toBe(
        `certificate ${d}/server.pem is not signed by CA ${d}/other-ca.pem`,
      );
      const expired = await tlsResult(tls('server', 'server'), new Date(Date.now() + 400 * 24 * 3600 * 1000));
      expect(expired).toMatchObject({ status: 'FAIL', fatal: true });
      expect(expired?.detail).toMatch(new RegExp(`^certificate ${d}/server\\.pem expired on `, 'u'));
      const missing = tls('nothere', 'server');
      await hvtTender(missing);
      expect(
        fatalFailures(await preflight(missing, await probe(missing, { kvmProbe: await kvmPresent() }))),
      ).toEqual([
        `tls: certificate ${d}/nothere.pem cannot be read: ENOENT (check the files given as --tls-ca, --tls-cert and --tls-key)`,
      ]);
    });

    it('a certificate that expires within 30 days warns without stopping start-up', async () => {
      const result = await tlsResult(tls('short', 'short'));
      expect(result).toMatchObject({ status: 'WARN', fatal: true, fix: 'renew the certificate' });
      expect(result?.detail).toMatch(/^certificate .*short\.pem expires on /u);
    });
  },
);

describe('web', () => {
  /** `petrel ca ARGS...` in the test's directory. */
  const ca = async (...args: string[]): Promise<void> => {
    const { caCommand } = await import('../../src/cli/commands/ca.js');
    const io = {
      stdout: () => {},
      stderr: () => {},
      readFile: async () => new Uint8Array(),
      writeFile: async () => {},
    };
    expect(await caCommand.run([...args, '--dir', path.join(dir, 'pki')], io)).toBe(0);
  };
  const web = (cert: string, key: string): PetrelConfig =>
    config({
      webListen: '127.0.0.1:0',
      tlsCa: path.join(dir, 'pki', 'cacert.pem'),
      webCert: path.join(dir, 'pki', cert),
      webKey: path.join(dir, 'pki', key),
    });
  const webResult = async (cfg: PetrelConfig) => byName(await preflight(cfg, await probe(cfg)), 'web');

  it('passes with petrel ca web-cert; refuses, fatally, a certificate browsers refuse', async () => {
    await ca('init');
    await ca('web-cert', 'localhost', '127.0.0.1');
    expect(requiredChecks(web('web.pem', 'web.key')).has('web')).toBe(true);
    expect(await webResult(web('web.pem', 'web.key'))).toMatchObject({ status: 'PASS', fatal: true });
    // The TLS endpoint's certificate: Ed25519 and no subjectAltName.
    const endpoint = await webResult(web('server.pem', 'server.key'));
    expect(endpoint).toMatchObject({ status: 'FAIL', fatal: true });
    expect(endpoint?.detail).toContain('no subjectAltName');
    expect(endpoint?.fix).toContain('petrel ca web-cert');
    expect((await webResult(web('web.pem', 'server.key')))?.detail).toContain('does not match');
    expect(await webResult(config())).toMatchObject({
      status: 'PASS',
      fatal: false,
      detail: 'not configured (no --web-listen)',
    });
  });
});
