// The capability probe on this host: what it finds when a KVM device, a tender, tun, a bridge
// or the right to make taps is there or not, and that each report is fresh (lost = gone).

import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { bundledNativePath } from '../../src/host/native.js';
import {
  bundledKvmProbePath,
  type CapabilityReport,
  type ProbeOptions,
  probeHost,
  probeTapName,
  usableTender,
} from '../../src/tender/probe.js';
import { netnsEachTest, tempDirEachTest } from '../host/helpers.js';
import { kvmUsable } from '../native/kvm.js';
import { writeFakeTender } from './fake-tender.js';

const isRoot = process.getuid?.() === 0;
const helper = bundledKvmProbePath();
const helperBuilt = helper !== null && existsSync(helper);
const bundledSpt = bundledNativePath('petrel-spt') ?? '/nonexistent/petrel-spt';
const sptBuilt = existsSync(bundledSpt);

let dir: string;
tempDirEachTest((made) => {
  dir = made;
});

/** Letters only (a tap prefix may not end in a digit), so parallel probes never share a probe tap. */
const privatePrefix = (): string =>
  `t${randomBytes(3)
    .toString('hex')
    .replace(/\d/gu, (d) => 'ghijklmnop'[Number(d)] ?? 'x')}`;

/** A probe that sees only what the test puts in `dir`: no PATH tenders, no bundled tender. */
function options(extra: Partial<ProbeOptions> = {}): ProbeOptions {
  return {
    stateDir: dir,
    searchPath: '',
    bundledHvt: null,
    bundledSpt: null,
    kvmDevice: path.join(dir, 'kvm'),
    tapPrefix: privatePrefix(),
    ...extra,
  };
}

describe('kvm', () => {
  it.skipIf(!helperBuilt)('a missing device is absent, with the open error and a hint', async () => {
    const report = await probeHost(options());
    expect(report.kvm).toBe(false);
    expect(report.problems.kvm).toEqual({
      detail: `${dir}/kvm cannot be opened: No such file or directory`,
      hint: 'is the kvm module loaded? is this a VM without nested virtualisation?',
    });
  });

  it.skipIf(!helperBuilt)('a device that opens but is not KVM fails at KVM_GET_API_VERSION', async () => {
    const report = await probeHost(options({ kvmDevice: '/dev/null' }));
    expect(report.kvm).toBe(false);
    expect(report.problems.kvm?.detail).toBe(
      '/dev/null does not answer KVM_GET_API_VERSION: Inappropriate ioctl for device',
    );
  });

  it('without the helper nothing is claimed, and the hint says how to build it', async () => {
    const report = await probeHost(options({ kvmProbe: path.join(dir, 'no-helper') }));
    expect(report.kvm).toBe(false);
    expect(report.problems.kvm?.hint).toBe('build it with `make -C native`');
  });

  // A stand-in for the helper on a host with KVM: the probe believes only API version 12.
  it('an API version other than 12 is not KVM as solo5 needs it', async () => {
    const fake = path.join(dir, 'fake-kvm-probe');
    for (const [answer, kvm] of [
      ['api 12', true],
      ['api 11', false],
    ] as const) {
      await writeFile(fake, `#!/bin/sh\necho '${answer}'\n`);
      await chmod(fake, 0o755);
      const report = await probeHost(options({ kvmProbe: fake }));
      expect(report.kvm).toBe(kvm);
      expect(report.problems.kvm === undefined).toBe(kvm);
    }
  });

  it.skipIf(!helperBuilt || !kvmUsable)('the real /dev/kvm on a host that has one', async () => {
    const report = await probeHost(options({ kvmDevice: '/dev/kvm' }));
    expect(report.kvm).toBe(true);
  });
});

describe('tenders', () => {
  // Fake tenders (test/tender/fake-tender.ts) stand in for solo5-hvt and solo5-spt, which this
  // machine cannot install.
  it('lists each tender found with its path, banner and ABI', async () => {
    await writeFakeTender(path.join(dir, 'solo5-hvt'));
    await writeFakeTender(path.join(dir, 'solo5-spt.2'));
    const report = await probeHost(options());
    expect(report.tenders).toEqual([
      { kind: 'hvt', path: `${dir}/solo5-hvt`, version: 'solo5-hvt tender, version v0.12.1', abi: 2 },
      { kind: 'spt', path: `${dir}/solo5-spt.2`, version: 'solo5-spt.2 tender, version v0.12.1', abi: 2 },
    ]);
    expect(report.problems['tenders.hvt']).toBeUndefined();
    expect(usableTender(report, 'hvt')?.path).toBe(`${dir}/solo5-hvt`);
  });

  it.skipIf(!sptBuilt)(
    'the bundled petrel-spt answers ABI version 2 and is the usable spt tender',
    async () => {
      const report = await probeHost(options({ bundledSpt }));
      expect(report.tenders).toEqual([
        {
          kind: 'spt',
          path: bundledSpt,
          version: expect.stringMatching(/^petrel-spt tender, version v\S+$/u),
          abi: 2,
        },
      ]);
      expect(usableTender(report, 'spt')?.path).toBe(bundledSpt);
      expect(report.problems['tenders.spt']).toBeUndefined();
    },
  );

  it('a missing tender is absent, with every place looked at', async () => {
    const report = await probeHost(options());
    expect(report.tenders).toEqual([]);
    expect(report.problems['tenders.hvt']?.detail).toBe(
      `tender does not exist, looked for ${dir}/solo5-hvt.2, solo5-hvt.2, ${dir}/solo5-hvt, solo5-hvt`,
    );
    // spt at solo5's own ABI 2, like hvt (src/tender/abi.ts): one check, one version.
    expect(report.problems['tenders.spt']).toEqual({
      detail: `tender does not exist, looked for ${dir}/solo5-spt.2, solo5-spt.2, ${dir}/solo5-spt, solo5-spt`,
      hint: 'install solo5-spt, build the bundled tender with `make -C native`, or point --tender-spt at one',
    });
  });

  it('an explicit tender path is the only candidate', async () => {
    await writeFakeTender(path.join(dir, 'solo5-hvt'));
    const report = await probeHost(options({ tenders: { hvt: path.join(dir, 'mine') } }));
    expect(report.tenders).toEqual([]);
    expect(report.problems['tenders.hvt']?.detail).toBe(
      `tender ${dir}/mine does not exist or is not executable`,
    );
  });

  it('a tender with another ABI is listed but not usable; one without an ABI line is not listed', async () => {
    await writeFakeTender(path.join(dir, 'solo5-hvt'), { abi: '3' });
    await writeFakeTender(path.join(dir, 'solo5-spt'), { abi: 'two' });
    const report = await probeHost(options());
    expect(report.tenders).toEqual([
      { kind: 'hvt', path: `${dir}/solo5-hvt`, version: 'solo5-hvt tender, version v0.12.1', abi: 3 },
    ]);
    expect(usableTender(report, 'hvt')).toBeNull();
    expect(report.problems['tenders.hvt']?.detail).toBe(
      `${dir}/solo5-hvt: unexpected solo5 tender --version output, expected one line with 'ABI version 2', got solo5-hvt tender, version v0.12.1\nABI version 3`,
    );
    expect(report.problems['tenders.spt']?.detail).toMatch(
      /expected one line with 'ABI version 2', got .*ABI version two$/su,
    );
  });

  it('a capability lost between two probes is gone from the second report; the first is untouched', async () => {
    const tender = path.join(dir, 'solo5-hvt');
    await writeFakeTender(tender);
    const first = await probeHost(options());
    await rm(tender);
    const second = await probeHost(options());
    expect(first.tenders.map((t) => t.kind)).toEqual(['hvt']);
    expect(second.tenders).toEqual([]);
    expect(second.problems['tenders.hvt']?.detail).toMatch(/^tender does not exist/u);
    expect(second).not.toBe(first);
    expect(Object.isFrozen(first) && Object.isFrozen(first.tenders) && Object.isFrozen(first.problems)).toBe(
      true,
    );
  });
});

describe('host resources and tun', () => {
  it('reports CPUs, memory and the size of the file system that will hold <state-dir>/block', async () => {
    const report: CapabilityReport = await probeHost(options({ stateDir: path.join(dir, 'not', 'yet') }));
    expect(report.cpus).toBeGreaterThan(0);
    expect(report.memoryMiB).toBeGreaterThan(0);
    expect(report.blockStorageMiB).toBeGreaterThan(0);
    expect(report.problems.blockStorageMiB).toBeUndefined();
    expect(Date.parse(report.probedAt)).not.toBeNaN();
  });

  it('a tun device that is missing is absent', async () => {
    const report = await probeHost(options({ tunDevice: path.join(dir, 'tun') }));
    expect(report.tun).toBe(false);
    expect(report.problems.tun?.detail).toBe(`${dir}/tun cannot be opened: No such file or directory`);
  });

  it.skipIf(!existsSync('/dev/net/tun') || !isRoot)('/dev/net/tun opens', async () => {
    expect((await probeHost(options())).tun).toBe(true);
  });
});

describe('probe tap name', () => {
  it('is the prefix and as much of "probe" as fits 15 bytes, never <prefix><digits>', () => {
    expect(probeTapName('ptap')).toBe('ptapprobe');
    expect(probeTapName('abcdefghijk')).toBe('abcdefghijkprob');
    expect(probeTapName('abcdefghijklmn')).toBe('abcdefghijklmnp');
  });
});

// Bridges and taps in a network namespace this test makes and always deletes.
describe.skipIf(!isRoot)('bridges and netAdmin in a network namespace', () => {
  let netns: string;
  const ip = netnsEachTest(
    'petrel-probe',
    ['link add br1 type bridge', 'link add br0 type bridge', 'link set dev br0 up'],
    (made) => {
      netns = made;
    },
  );

  it('lists bridges with up/down, and creates and deletes its probe tap', async () => {
    const report = await probeHost(options({ netns, tapPrefix: 'ptap' }));
    expect(report.bridges).toEqual([
      { name: 'br0', up: true },
      { name: 'br1', up: false },
    ]);
    expect(report.netAdmin).toBe(true);
    expect(ip('-o', 'link', 'show')).not.toContain('ptapprobe');
  });

  it('a probe tap left by a probe that died is removed first', async () => {
    ip('tuntap', 'add', 'dev', 'ptapprobe', 'mode', 'tap');
    const report = await probeHost(options({ netns, tapPrefix: 'ptap' }));
    expect(report.netAdmin).toBe(true);
    expect(ip('-o', 'link', 'show')).not.toContain('ptapprobe');
  });

  it('a bridge removed between probes disappears', async () => {
    expect((await probeHost(options({ netns }))).bridges.map((b) => b.name)).toEqual(['br0', 'br1']);
    ip('link', 'del', 'br1');
    expect((await probeHost(options({ netns }))).bridges.map((b) => b.name)).toEqual(['br0']);
  });

  it('where `ip` fails, there are no bridges and no netAdmin, each with the reason', async () => {
    const report = await probeHost(options({ netns: `${netns}-missing` }));
    expect(report.bridges).toEqual([]);
    expect(report.netAdmin).toBe(false);
    expect(report.problems.bridges?.detail).toMatch(/ip -n .* failed/u);
    expect(report.problems.netAdmin?.detail).toMatch(/ip -n .* failed/u);
  });
});
