// The pure side of tender jails: the id range and its allocator, the limits of a launch, where
// cgroups go on v1 and v2 hosts (from mountinfo and /proc/self/cgroup texts), petrel-jail's options.
import { describe, expect, it } from 'vitest';
import {
  cgroupLayout,
  DEFAULT_ID_RANGE,
  JailIds,
  jailCgroups,
  jailLimits,
  jailOptions,
  parseIdRange,
  TENDER_OVERHEAD_MIB,
} from '../../src/resources/jail.js';

const MIB = 1024 * 1024;

describe('the id range', () => {
  it('defaults above 16 bits and below subordinate ids and nspawn', () => {
    expect(DEFAULT_ID_RANGE).toEqual({ first: 65_536, last: 99_999 });
  });

  it('parses FIRST-LAST and refuses nobody, 16-bit -1, system ids and reversed ranges', () => {
    expect(parseIdRange('70000-70010')).toEqual({ ok: true, value: { first: 70_000, last: 70_010 } });
    for (const bad of ['60000-65534', '65535-70000', '10-2000', '80000-70000', 'a-b', '70000', '-1-5'])
      expect(parseIdRange(bad).ok, bad).toBe(false);
  });

  it('hands out ids in turn, skips held and refused ones, frees, and says when none is left', () => {
    const ids = new JailIds({ first: 70_000, last: 70_003 });
    expect(ids.hold(70_001)).toBe(true);
    expect(ids.hold(70_001)).toBe(false);
    expect(ids.hold(69_999)).toBe(false);
    expect(ids.take()).toEqual({ ok: true, value: 70_000 });
    // Freed, 70000 is not given again before the range went round.
    ids.free(70_000);
    expect(ids.take((id) => id === 70_002)).toEqual({ ok: true, value: 70_003 });
    expect(ids.take()).toEqual({ ok: true, value: 70_000 });
    expect(ids.take()).toEqual({ ok: true, value: 70_002 });
    const none = ids.take();
    expect(none.ok).toBe(false);
    // A rotation may start anywhere in the range (the shell starts it at random), never outside.
    expect(new JailIds({ first: 70_000, last: 70_003 }, 70_002).take()).toEqual({ ok: true, value: 70_002 });
    expect(new JailIds({ first: 70_000, last: 70_003 }, 80_000).take()).toEqual({ ok: true, value: 70_000 });
    if (!none.ok)
      expect(none.error).toMatchObject({
        code: 'E_JAIL_IDS',
        message: expect.stringContaining('70000-70003'),
      });
    ids.free(70_001);
    expect(ids.take()).toEqual({ ok: true, value: 70_001 });
  });
});

describe('the limits of a launch', () => {
  it('address space is guest memory plus the overhead; hvt counts the KVM worker, both leave room for a dead predecessor; FSIZE the largest block, 1 MiB at least', () => {
    expect(jailLimits({ kind: 'spt', memoryMiB: 32, nets: 0, blockSizesMiB: [] })).toEqual({
      addressSpace: (32 + TENDER_OVERHEAD_MIB) * MIB,
      processes: 2,
      openFiles: 64,
      fileSize: MIB,
    });
    expect(jailLimits({ kind: 'hvt', memoryMiB: 512, nets: 2, blockSizesMiB: [4, 16] })).toEqual({
      addressSpace: (512 + TENDER_OVERHEAD_MIB) * MIB,
      processes: 4,
      openFiles: 68,
      fileSize: 16 * MIB,
    });
  });
});

const V1_MOUNTINFO = [
  '31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755',
  '34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset',
  '35 31 0:32 /lxc/box /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory',
  '39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids',
  '41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw',
].join('\n');
const V1_OWN = [
  '8:pids:/system.slice/petreld.service',
  '4:memory:/lxc/box/petreld',
  '3:cpuset:/',
  '0::/',
].join('\n');

describe('where cgroups go', () => {
  it('v1: under each controller, below petreld’s own cgroup, a mounted subtree taken into account', () => {
    const layout = cgroupLayout(V1_MOUNTINFO, V1_OWN, () => null);
    expect(layout).toEqual({
      version: 1,
      parents: {
        memory: '/sys/fs/cgroup/memory/petreld/petrel-tenders',
        pids: '/sys/fs/cgroup/pids/system.slice/petreld.service/petrel-tenders',
        cpuset: '/sys/fs/cgroup/cpuset/petrel-tenders',
      },
    });
    expect(jailCgroups(layout, 70_000)).toContain(
      '/sys/fs/cgroup/pids/system.slice/petreld.service/petrel-tenders/70000',
    );
  });

  it('v1: a cgroup the mount does not show falls back to the hierarchy’s top', () => {
    const layout = cgroupLayout(
      V1_MOUNTINFO,
      V1_OWN,
      () => null,
      (dir) => !dir.includes('system.slice'),
    );
    expect(layout.version === 1 && layout.parents.pids).toBe('/sys/fs/cgroup/pids/petrel-tenders');
  });

  it('v2: petreld in the petreld leaf of its delegated cgroup (DelegateSubgroup): jails beside it, with what the delegated cgroup offers', () => {
    const mountinfo =
      '30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 rw,nsdelegate';
    const own = '0::/system.slice/petreld.service/petreld';
    const asked: string[] = [];
    const layout = cgroupLayout(mountinfo, own, (cgroup) => {
      asked.push(cgroup);
      return cgroup === '/system.slice/petreld.service' ? 'cpuset cpu io memory pids' : null;
    });
    expect(asked).toEqual(['/system.slice/petreld.service']);
    expect(layout).toEqual({
      version: 2,
      delegator: '/sys/fs/cgroup/system.slice/petreld.service',
      parent: '/sys/fs/cgroup/system.slice/petreld.service/petrel-tenders',
      controllers: ['memory', 'pids', 'cpuset'],
    });
    expect(jailCgroups(layout, 70_001)).toEqual([
      '/sys/fs/cgroup/system.slice/petreld.service/petrel-tenders/70001',
    ]);
    const options = jailOptions({
      id: 70_001,
      kind: 'spt',
      cpus: [1, 0],
      limits: jailLimits({ kind: 'spt', memoryMiB: 32, nets: 0, blockSizesMiB: [] }),
      layout,
      cpuset: { cpus: '', mems: '' },
      files: ['/usr/lib/petrel/petrel-spt', '/run/petrel/a.img'],
      writable: [],
      tun: false,
      kvmDevice: '/dev/kvm',
    });
    const dir = '/sys/fs/cgroup/system.slice/petreld.service/petrel-tenders';
    expect(options).toEqual([
      '--id',
      '70001',
      '--cpus',
      '0,1',
      '--limit',
      `as=${96 * MIB}`,
      '--limit',
      'nproc=2',
      '--limit',
      'nofile=64',
      '--limit',
      `fsize=${MIB}`,
      '--cgroup-write',
      '/sys/fs/cgroup/system.slice/petreld.service/cgroup.subtree_control=+memory +pids +cpuset',
      '--cgroup-mkdir',
      dir,
      '--cgroup-write',
      `${dir}/cgroup.subtree_control=+memory +pids +cpuset`,
      '--cgroup-mkdir',
      `${dir}/70001`,
      '--cgroup-write',
      `${dir}/70001/memory.max=${96 * MIB}`,
      '--cgroup-write',
      `${dir}/70001/pids.max=2`,
      '--cgroup-write',
      `${dir}/70001/cpuset.cpus=0,1`,
      '--cgroup-join',
      `${dir}/70001`,
      '--ro',
      '/usr/lib/petrel/petrel-spt',
      '--ro',
      '/run/petrel/a.img',
    ]);
  });

  it('v2 in the root cgroup (exempt from the no-internal-process rule): jails below the root', () => {
    const mountinfo = '30 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw';
    expect(cgroupLayout(mountinfo, '0::/', () => 'memory pids')).toEqual({
      version: 2,
      delegator: '/sys/fs/cgroup',
      parent: '/sys/fs/cgroup/petrel-tenders',
      controllers: ['memory', 'pids'],
    });
  });

  it('v2 in a cgroup that holds petreld itself (systemd 252 Delegate=yes): none, since it cannot give controllers on', () => {
    const mountinfo = '30 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw';
    const layout = cgroupLayout(mountinfo, '0::/system.slice/petreld.service', () => 'cpuset memory pids');
    expect(layout).toMatchObject({
      version: 0,
      why: expect.stringContaining('no-internal-process rule); with systemd ≥ 254, DelegateSubgroup=petreld'),
    });
  });

  it('v2 without delegated controllers, or no cgroup file system: none, and why', () => {
    const mountinfo = '30 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw';
    const none = cgroupLayout(mountinfo, '0::/user.slice/petreld', () => 'cpu io');
    expect(none).toMatchObject({ version: 0, why: expect.stringContaining('Delegate=yes') });
    expect(cgroupLayout('', '', () => null)).toMatchObject({ version: 0 });
    expect(jailCgroups(none, 1)).toEqual([]);
  });

  it('v1 cpusets get the parent’s cpus and mems before the jail’s; hvt gets the configured KVM device, networks /dev/net/tun', () => {
    const layout = cgroupLayout(V1_MOUNTINFO, V1_OWN, () => null);
    const options = jailOptions({
      id: 70_002,
      kind: 'hvt',
      cpus: [0],
      limits: jailLimits({ kind: 'hvt', memoryMiB: 32, nets: 1, blockSizesMiB: [2] }),
      layout,
      cpuset: { cpus: '0-1', mems: '0' },
      files: [],
      writable: ['/var/lib/petrel/block/a:b'],
      tun: true,
      kvmDevice: '/srv/dev/kvm0',
    });
    const text = options.join(' ');
    expect(text).toContain(
      '--cgroup-write /sys/fs/cgroup/cpuset/petrel-tenders/cpuset.cpus=0-1 --cgroup-write /sys/fs/cgroup/cpuset/petrel-tenders/cpuset.mems=0 --cgroup-write /sys/fs/cgroup/cpuset/petrel-tenders/70002/cpuset.mems=0 --cgroup-write /sys/fs/cgroup/cpuset/petrel-tenders/70002/cpuset.cpus=0',
    );
    expect(text).toContain('/sys/fs/cgroup/memory/petreld/petrel-tenders/70002/memory.limit_in_bytes=');
    expect(text).toContain('--rw /var/lib/petrel/block/a:b --kvm /srv/dev/kvm0 --dev tun');
    expect(text).toContain(`--limit fsize=${2 * MIB}`);
  });
});
