// Block and network devices under petrel-spt: the guest does its own pread64/pwrite64 on the
// block descriptor and read/write on the tap descriptor the boot information hands it
// (native/spt/ABI.md), through the same device attachment code as petrel-hvt (common/). The net
// tests run in a network namespace this file creates: a bridge with the guest's tap and a peer
// tap for the test's own end, removed whatever happens.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blkPattern, fnv1a } from './layout.js';
import { type Outcome, type Running, runSync, start, tapPeer } from './native.js';
import { canMakeNetns, createNetns, type Netns } from './netns.js';
import { requireSptBuilt, runSpt, spt, sptCanaryBlk, sptCanaryNet } from './spt.js';

const GUEST_MAC = '02:00:00:00:00:12';
const PEER_MAC = '02:00:00:00:00:11';

let dir: string;
let ns: Netns | undefined;
const running: Running[] = [];

beforeAll(() => {
  requireSptBuilt();
  dir = mkdtempSync(join(tmpdir(), 'petrel-spt-devices-'));
  if (canMakeNetns) ns = createNetns(['guest0', 'peer0']);
});
afterAll(() => {
  for (const r of running) r.stop();
  ns?.destroy();
  rmSync(dir, { recursive: true, force: true });
});

describe('the guest writes and reads every sector (blk mode)', () => {
  it.each([
    [512, 16],
    [4096, 4],
  ])('sector size %i, %i sectors: the file holds the pattern and the checksum matches', (size, sectors) => {
    const file = join(dir, `blk-${size}.img`);
    writeFileSync(file, Buffer.alloc(size * sectors, 0xee));
    const r = runSpt([
      `--block:storage=${file}`,
      `--block-sector-size:storage=${size}`,
      '--mem=2',
      sptCanaryBlk,
      'blk',
    ]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const onDisk = readFileSync(file);
    expect(onDisk.equals(blkPattern(sectors, size))).toBe(true);
    // A read at the capacity is refused by the guest's platform layer with EINVAL (2), before it
    // could reach the filter, and the guest goes on.
    expect(r.stdout).toBe(
      `petrel-canary blk sectors=${sectors} sector_size=${size} checksum=${fnv1a(onDisk)} eof_ret=2\n`,
    );
  });
});

// canMakeNetns is false only for a non-root user; these tests need root for the namespace.
describe.skipIf(!canMakeNetns)('frames through the bridge', () => {
  function sptIn(args: readonly string[]): Outcome {
    const [cmd, full] = (ns as Netns).wrap(spt, args);
    return runSync(cmd, full);
  }

  function startIn(cmd: string, args: readonly string[]): Running {
    const [c, full] = (ns as Netns).wrap(cmd, args);
    const r = start(c, full);
    running.push(r);
    return r;
  }

  const hex = (s: string) => Buffer.from(s, 'latin1').toString('hex');
  const macHex = (m: string) => m.replaceAll(':', '');

  it('write(2) on the tap: the guest sends one raw frame, the test reads it on the peer tap', async () => {
    const peer = startIn(tapPeer, ['peer0', 'recv', '88b5', '15000']);
    await peer.waitFor('ready');
    const r = sptIn([
      '--net:service=guest0',
      `--net-mac:service=${GUEST_MAC}`,
      '--mem=2',
      sptCanaryNet,
      'net-send',
    ]);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe(`petrel-canary net-send ret=0 mac=${GUEST_MAC} mtu=1500\n`);
    expect(r.status).toBe(0);
    expect((await peer.exited).status).toBe(0);
    const payload = hex('petrel-canary net-send').padEnd((60 - 14) * 2, '0');
    expect(peer.stdout().split('\n')[1]).toBe(`ffffffffffff${macHex(GUEST_MAC)}88b5${payload}`);
  });

  it('read(2) after epoll: the guest returns a frame the test sends, with its own MAC as source', async () => {
    const guest = startIn(spt, [
      '--net:service=guest0',
      `--net-mac:service=${GUEST_MAC}`,
      '--mem=2',
      sptCanaryNet,
      'net-echo',
    ]);
    await guest.waitFor(`petrel-canary net-echo ready mac=${GUEST_MAC}`);
    const payload = hex('a frame from the host, returned by the spt guest');
    const out = `${macHex(GUEST_MAC)}${macHex(PEER_MAC)}88b5${payload}`;
    const peer = startIn(tapPeer, ['peer0', 'xchg', out, '88b5', GUEST_MAC, '15000']);
    expect((await peer.exited).status).toBe(0);
    expect(peer.stdout().split('\n')[1]).toBe(`${macHex(PEER_MAC)}${macHex(GUEST_MAC)}88b5${payload}`);
    await guest.waitFor('petrel-canary echoed 1 ret=0');
    process.kill(guest.pid, 'SIGTERM');
    expect(await guest.exited).toMatchObject({ status: null, signal: 'SIGTERM' });
  });

  it('a tap that does not exist: solo5\'s attach error, then "Invalid option"', () => {
    const r = sptIn(['--net:service=nope0', sptCanaryNet]);
    expect(r.stderr.split('\n').slice(0, 2)).toEqual([
      'petrel-spt: Could not attach interface: nope0: No such file or directory',
      "petrel-spt: Invalid option: `--net:service=nope0'",
    ]);
    expect(r.status).toBe(1);
  });
});
