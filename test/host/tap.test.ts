import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkBridges, listBridges } from '../../src/host/bridges.js';
import { listLinks } from '../../src/host/ip.js';
import {
  createTap,
  listOwnedTaps,
  lowestFreeTap,
  removeTap,
  TapNames,
  tapNumber,
} from '../../src/host/tap.js';
import { failure, netnsEachTest, value } from './helpers.js';

/** `taken` for lowestFreeTap from interface names, as a listing would give them. */
const names =
  (prefix: string, list: string[]) =>
  (n: number): boolean =>
    list.includes(`${prefix}${n}`);

describe('tap numbering (pure)', () => {
  it('takes the lowest number not used by any interface', () => {
    expect(value(lowestFreeTap('ptap', names('ptap', []))).name).toBe('ptap0');
    expect(value(lowestFreeTap('ptap', names('ptap', ['ptap0', 'ptap1', 'ptap3']))).name).toBe('ptap2');
    expect(value(lowestFreeTap('ptap', names('ptap', ['ptap1', 'eth0'])))).toEqual({ name: 'ptap0', n: 0 });
    // From a number below which everything is taken.
    expect(value(lowestFreeTap('ptap', names('ptap', ['ptap0', 'ptap1', 'ptap3']), 2)).name).toBe('ptap2');
  });

  it('stays within 15 bytes and says when the names run out', () => {
    const prefix = 'abcdefghijklmn'; // 14 bytes: only one digit fits
    const used = Array.from({ length: 10 }, (_, i) => `${prefix}${i}`);
    expect(failure(lowestFreeTap(prefix, names(prefix, used))).code).toBe('E_HOST_TAP_EXHAUSTED');
  });

  it('refuses an empty prefix, one ending in a digit, and one too long for a number', () => {
    for (const prefix of ['', 'ptap1', 'abcdefghijklmno', 'p/tap', 'p tap']) {
      expect(failure(lowestFreeTap(prefix, () => false)).code).toBe('E_HOST_TAP_PREFIX');
    }
  });

  it('reads the number of a tap name only when it is written as the number', () => {
    expect(tapNumber('ptap', 'ptap12')).toBe(12);
    expect(tapNumber('ptap', 'ptap0')).toBe(0);
    expect(tapNumber('ptap', 'ptap01')).toBeNull();
    expect(tapNumber('ptap', 'xtap1')).toBeNull();
    expect(tapNumber('ptap', 'ptap')).toBeNull();
  });
});

const isRoot = process.getuid?.() === 0;

// Real taps on a real bridge, inside a network namespace this test makes and always deletes.
describe.skipIf(!isRoot)('taps in a network namespace', () => {
  let netns: string;
  const ip = netnsEachTest(
    'petrel-test',
    ['link add br0 type bridge', 'link add br1 type bridge', 'link add veth0 type veth peer name veth1'],
    (made) => {
      netns = made;
    },
    // Taps are deleted explicitly first: persistent tun devices must not outlive the test.
    () => {
      for (const line of ip('-o', 'link', 'show').split('\n')) {
        const tap = /^\d+: ((?:ptap|xtap)\d+)[@:]/u.exec(line)?.[1];
        if (tap !== undefined) ip('link', 'del', 'dev', tap);
      }
    },
  );

  it('lists bridges and checks them with the Albatross text', async () => {
    expect(value(await listBridges({ netns }))).toEqual(['br0', 'br1']);
    expect(value(await checkBridges(['br1', 'br0'], { netns }))).toBeUndefined();
    expect(failure(await checkBridges(['br0', 'veth0'], { netns })).message).toBe(
      'interface veth0 does not exist',
    );
  });

  it('creates a tap that is up and attached to the bridge; undo deletes it', async () => {
    const tap = value(await createTap('br0', { netns }));
    expect(tap.value).toBe('ptap0');
    const link = value(await listLinks([], { netns })).find((l) => l.name === 'ptap0');
    expect(link).toMatchObject({ kind: 'tun', tunType: 'tap', master: 'br0', up: true });
    await tap.undo();
    expect(value(await listLinks([], { netns })).map((l) => l.name)).not.toContain('ptap0');
  });

  it('numbers taps with the lowest free number, also per prefix', async () => {
    const t0 = value(await createTap('br0', { netns }));
    const t1 = value(await createTap('br1', { netns }));
    expect([t0.value, t1.value]).toEqual(['ptap0', 'ptap1']);
    await t0.undo();
    expect(value(await createTap('br0', { netns })).value).toBe('ptap0');
    expect(value(await createTap('br0', { netns })).value).toBe('ptap2');
    expect(value(await createTap('br0', { netns, prefix: 'xtap' })).value).toBe('xtap0');
    expect(value(await listOwnedTaps({ netns }))).toEqual(['ptap0', 'ptap1', 'ptap2']);
    expect(value(await listOwnedTaps({ netns, prefix: 'xtap' }))).toEqual(['xtap0']);
  });

  it('skips a number taken by an interface that is not a tap, and does not list it as owned', async () => {
    ip('link', 'add', 'ptap0', 'type', 'veth', 'peer', 'name', 'peer0');
    ip('tuntap', 'add', 'dev', 'ptap2', 'mode', 'tun');
    expect(value(await createTap('br0', { netns })).value).toBe('ptap1');
    expect(value(await createTap('br0', { netns })).value).toBe('ptap3');
    expect(value(await listOwnedTaps({ netns }))).toEqual(['ptap1', 'ptap3']);
  });

  it('reports the failing command with its stderr and leaves no tap behind', async () => {
    const error = failure(await createTap('nosuchbr', { netns }));
    expect(error.code).toBe('E_HOST_COMMAND');
    expect(error.message).toMatch(
      /^ip -n petrel-test-\w+ -batch: tuntap add dev ptap0 mode tap; link set dev ptap0 up; link set dev ptap0 master nosuchbr failed: .*nosuchbr/u,
    );
    expect(value(await listOwnedTaps({ netns }))).toEqual([]);
  });

  it('when another creator takes the name first, takes the next free one and leaves theirs alone', async () => {
    // An `ip` that lets "someone else" create ptap0 just before each of Petrel's batches.
    const dir = mkdtempSync(path.join(tmpdir(), 'petrel-ip-'));
    const racingIp = path.join(dir, 'ip');
    writeFileSync(
      racingIp,
      '#!/bin/sh\ncase "$*" in *-batch*) ip "$1" "$2" tuntap add dev ptap0 mode tap 2>/dev/null ;; esac\nexec ip "$@"\n',
      { mode: 0o755 },
    );
    try {
      const tap = value(await createTap('br0', { netns, ipCommand: racingIp }));
      expect(tap.value).toBe('ptap1');
      expect(value(await listOwnedTaps({ netns }))).toEqual(['ptap0', 'ptap1']);
      const link = value(await listLinks([], { netns })).find((l) => l.name === 'ptap0');
      expect(link?.master).toBeNull();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a daemon's tap names: lowest free among its own, without listing, reused once removed", async () => {
    // An `ip` that records every command line: a listing is `-d -j link show`.
    const dir = mkdtempSync(path.join(tmpdir(), 'petrel-ip-'));
    const log = path.join(dir, 'log');
    const countingIp = path.join(dir, 'ip');
    writeFileSync(countingIp, `#!/bin/sh\necho "$*" >> ${log}\nexec ip "$@"\n`, { mode: 0o755 });
    const listings = () =>
      (existsSync(log) ? readFileSync(log, 'utf8') : '').split('\n').filter((l) => l.includes('link show'))
        .length;
    try {
      const taps = new TapNames({ netns, ipCommand: countingIp });
      const made = [];
      for (let i = 0; i < 5; i++) made.push(value(await taps.create(i % 2 === 0 ? 'br0' : 'br1')));
      expect(made.map((t) => t.value)).toEqual(['ptap0', 'ptap1', 'ptap2', 'ptap3', 'ptap4']);
      expect(listings()).toBe(0);
      await made[1]?.undo();
      value(await taps.remove('ptap3'));
      expect(value(await taps.create('br0')).value).toBe('ptap1');
      expect(value(await taps.create('br0')).value).toBe('ptap3');
      expect(value(await taps.create('br0')).value).toBe('ptap5');
      expect(listings()).toBe(0);
      // Someone else's interfaces with tap names: found by one listing, then skipped.
      ip('link', 'add', 'ptap6', 'type', 'veth', 'peer', 'name', 'peer6');
      ip('tuntap', 'add', 'dev', 'ptap7', 'mode', 'tap');
      expect(value(await taps.create('br0')).value).toBe('ptap8');
      expect(listings()).toBe(1);
      expect(value(await taps.create('br0')).value).toBe('ptap9');
      expect(listings()).toBe(1);
      const attached = value(await listLinks([], { netns })).filter(
        (l) => l.master === 'br0' || l.master === 'br1',
      );
      expect(attached.map((l) => l.name).sort()).toEqual(
        ['ptap0', 'ptap1', 'ptap2', 'ptap3', 'ptap4', 'ptap5', 'ptap8', 'ptap9'].sort(),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a daemon's tap names skip the taps it holds from before (adopted at start-up)", async () => {
    ip('tuntap', 'add', 'dev', 'ptap0', 'mode', 'tap');
    ip('tuntap', 'add', 'dev', 'ptap1', 'mode', 'tap');
    const taps = new TapNames({ netns });
    taps.hold(['ptap0', 'ptap1', 'eth0']);
    expect(value(await taps.create('br0')).value).toBe('ptap2');
    value(await taps.remove('ptap0'));
    expect(value(await taps.create('br0')).value).toBe('ptap0');
  });

  it('removes a tap idempotently, and never an interface of another kind', async () => {
    value(await createTap('br0', { netns }));
    value(await removeTap('ptap0', { netns }));
    expect(value(await listOwnedTaps({ netns }))).toEqual([]);
    value(await removeTap('ptap0', { netns }));
    const error = failure(await removeTap('veth0', { netns }));
    expect(error.message).toMatch(
      /^ip -n \S+ tuntap del dev veth0 mode tap failed: ioctl\(TUNSETIFF\): Invalid argument$/u,
    );
    expect(value(await listLinks([], { netns })).map((l) => l.name)).toContain('veth0');
    expect(failure(await removeTap('../x', { netns })).code).toBe('E_HOST_IFNAME');
  });

  it('refuses a namespace name that could be read as a path or an option', async () => {
    expect(failure(await listBridges({ netns: '../x' })).code).toBe('E_HOST_NETNS');
    expect(failure(await listBridges({ netns: '-all' })).code).toBe('E_HOST_NETNS');
  });
});
