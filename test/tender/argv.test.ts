import { describe, expect, it } from 'vitest';
import { type Name, parseName } from '../../src/resources/name.js';
import { deriveMac, tenderArgv, type UnikernelLaunch } from '../../src/tender/argv.js';

function name(text: string): Name {
  const parsed = parseName(text);
  if (!parsed.ok) throw new Error(parsed.error.message);
  return parsed.value;
}

const web: UnikernelLaunch = {
  name: name('user:web'),
  kind: 'hvt',
  memory: 512,
  cpuids: [0],
  // The semantics §8.2 example shows 00:80:41:9a:6f:39, which is the derived MAC of
  // (default, foo:bar), not of (service, user:web): here it is a configured MAC.
  nets: [{ netif: 'service', bridge: 'br0', tap: 'vmmtap0', mac: '00:80:41:9a:6f:39' }],
  blocks: [{ name: 'storage', path: '/var/lib/albatross/block/user:disk', sectorSize: 4096 }],
  addName: true,
  args: ['--ipv4=10.0.0.2/24'],
  image: '/run/albatross/user:web.img',
};

function argv(launch: UnikernelLaunch, fullName = false): readonly string[] {
  const result = tenderArgv(launch, { tender: 'solo5-hvt', fullName });
  if (!result.ok) throw new Error(result.error.message);
  return result.value;
}

function refusal(launch: UnikernelLaunch): string {
  const result = tenderArgv(launch, { tender: 'solo5-hvt' });
  return result.ok ? 'accepted' : result.error.message;
}

describe('deterministic MAC (wire §3.6 vectors)', () => {
  it.each([
    ['default', 'foo:bar', '00:80:41:9a:6f:39'],
    ['service', ':hello', '00:80:41:cd:8a:eb'],
    ['service', 'sub:ctl', '00:80:41:a0:fb:4e'],
  ])('MD5(%s ‖ %s)', (netif, text, mac) => {
    expect(deriveMac(netif, name(text))).toBe(mac);
  });
});

describe('tender argument vector (semantics §8.2)', () => {
  it('matches the example of the semantics exactly', () => {
    expect(argv(web).join(' ')).toBe(
      'taskset -c 0 solo5-hvt --mem=512 --net:service=vmmtap0 --net-mac:service=00:80:41:9a:6f:39 ' +
        '--block:storage=/var/lib/albatross/block/user:disk --block-sector-size:storage=4096 ' +
        '-- /run/albatross/user:web.img --name=web --ipv4=10.0.0.2/24',
    );
  });

  it('derives the MAC when none is configured, and groups options by kind in configuration order', () => {
    const launch: UnikernelLaunch = {
      ...web,
      name: name('sub:ctl'),
      cpuids: [3, 1, 2],
      nets: [
        { netif: 'service', tap: 'ptap4' },
        { netif: 'management', tap: 'ptap2', mac: '02:00:00:00:00:AA' },
      ],
      blocks: [
        { name: 'b', path: '/s/block/sub:b' },
        { name: 'a', path: '/s/block/sub:a', sectorSize: 512 },
      ],
      addName: false,
      args: ['x', '--y'],
      image: '/r/sub:ctl.img',
    };
    expect(argv(launch)).toEqual([
      'taskset',
      '-c',
      '1,2,3',
      'solo5-hvt',
      '--mem=512',
      '--net:service=ptap4',
      '--net:management=ptap2',
      '--net-mac:service=00:80:41:a0:fb:4e',
      '--net-mac:management=02:00:00:00:00:aa',
      '--block:b=/s/block/sub:b',
      '--block:a=/s/block/sub:a',
      '--block-sector-size:a=512',
      '--',
      '/r/sub:ctl.img',
      'x',
      '--y',
    ]);
  });

  it('takes null as absent, as the wire codec writes it', () => {
    const launch: UnikernelLaunch = {
      ...web,
      name: name(':hello'),
      nets: [{ netif: 'service', bridge: null, mac: null, tap: 'ptap0' }],
      blocks: [{ name: 'storage', path: '/s/block/:storage', sectorSize: null }],
    };
    const words = argv(launch);
    expect(words).toContain('--net-mac:service=00:80:41:cd:8a:eb');
    expect(words.filter((w) => w.startsWith('--block-sector-size'))).toEqual([]);
  });

  it('writes the full name with --no-drop-path, and nothing but `--` and the image when bare', () => {
    expect(argv(web, true)).toContain('--name=user:web');
    const bare: UnikernelLaunch = { ...web, nets: [], blocks: [], addName: false, args: [] };
    expect(argv(bare)).toEqual([
      'taskset',
      '-c',
      '0',
      'solo5-hvt',
      '--mem=512',
      '--',
      '/run/albatross/user:web.img',
    ]);
  });

  it('refuses what the tender would fail on late or silently (solo5.md §2.7)', () => {
    expect(refusal({ ...web, name: name('user:') })).toBe('path used instead of name');
    expect(refusal({ ...web, blocks: [{ name: 'storage', path: '/a b', sectorSize: 512 }] })).toBe(
      'invalid block path "/a b"',
    );
    expect(refusal({ ...web, blocks: [{ name: 'storage', path: '/x', sectorSize: 1000 }] })).toBe(
      'sector size must be a power of two greater than or equal 512',
    );
    expect(refusal({ ...web, blocks: [{ name: 'storage', path: '/x', sectorSize: 65536 }] })).not.toBe(
      'accepted',
    );
    expect(refusal({ ...web, nets: [{ netif: 'service', tap: 'a-very-long-tap0' }] })).toBe(
      'invalid tap name "a-very-long-tap0"',
    );
    expect(refusal({ ...web, nets: [{ netif: 'ser-vice', tap: 't0' }] })).toBe(
      'invalid network name "ser-vice"',
    );
    expect(refusal({ ...web, nets: [{ netif: 'service', tap: 't0', mac: '00:80:41:9a:6f' }] })).toBe(
      'invalid MAC address "00:80:41:9a:6f"',
    );
    expect(
      refusal({
        ...web,
        nets: [
          { netif: 'a', tap: 't0' },
          { netif: 'a', tap: 't1' },
        ],
      }),
    ).toBe('Bridge names must be a set');
    expect(refusal({ ...web, memory: 4098 })).toMatch(/^memory 4098 MB outside/);
    expect(refusal({ ...web, kind: 'spt', memory: 5000 })).toBe('accepted');
    expect(refusal({ ...web, cpuids: [] })).toBe('no CPU to run on');
  });

  it('limits the joined guest command line to 8191 characters, --name included', () => {
    const fill = (n: number): string[] => ['x'.repeat(n)];
    // "--name=web " takes 11 characters.
    expect(refusal({ ...web, args: fill(8191 - 11) })).toBe('accepted');
    expect(refusal({ ...web, args: fill(8192 - 11) })).toBe(
      'Guest command line too long (max=8191 characters)',
    );
  });
});
