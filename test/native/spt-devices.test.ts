// Block and network devices under petrel-spt: the guest does its own pread64/pwrite64 on the
// block descriptor and read/write on the tap descriptor the manifest copy hands it (hostfd,
// solo5-spt.md §3), through the same device attachment code as petrel-hvt (common/). The net
// tests run in a network namespace this file creates: a bridge with the guest's tap and a peer
// tap for the test's own end, removed whatever happens. With SOLO5_SPT set, the same guests run
// under solo5-spt too and must do the same.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectFrameEchoed, expectFrameSent } from './frames.js';
import { blkPattern, fnv1a } from './layout.js';
import { type Outcome, type Running, runSync, start, tapPeer } from './native.js';
import { canMakeNetns, createNetns, type Netns } from './netns.js';
import { requireSptBuilt, runBoth, solo5Spt, spt, sptCanaryBlk, sptCanaryNet } from './spt.js';

const GUEST_MAC = '02:00:00:00:00:12';

/** User and system CPU time a process has used (ms), from /proc/<pid>/stat. */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}
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
    const args = [
      `--block:storage=${file}`,
      `--block-sector-size:storage=${size}`,
      '--mem=2',
      sptCanaryBlk,
      'blk',
    ];
    const r = runBoth(args, {
      run: (tender) => {
        writeFileSync(file, Buffer.alloc(size * sectors, 0xee));
        const out = runSync(tender, args);
        expect(readFileSync(file).equals(blkPattern(sectors, size)), tender).toBe(true);
        return out;
      },
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const onDisk = readFileSync(file);
    // A read at the capacity is refused by the guest's platform layer with EINVAL (2), before it
    // could reach the filter, and the guest goes on.
    expect(r.stdout).toBe(
      `petrel-canary blk sectors=${sectors} sector_size=${size} checksum=${fnv1a(onDisk)} eof_ret=2\n`,
    );
  });
});

// canMakeNetns is false only for a non-root user; these tests need root for the namespace.
describe.skipIf(!canMakeNetns)('frames through the bridge', () => {
  const tenders = solo5Spt === null ? [spt] : [spt, solo5Spt];

  function sptIn(args: readonly string[]): Outcome {
    const [cmd, full] = (ns as Netns).wrap(spt, args);
    return runSync(cmd, full);
  }

  /** Runs to the end without blocking the event loop: the peer tap's process must read meanwhile. */
  async function inNetns(tender: string, args: readonly string[]): Promise<Outcome> {
    const r = startIn(tender, args);
    const end = await r.exited;
    return { status: end.status, signal: end.signal, stdout: r.stdout(), stderr: r.stderr() };
  }

  function startIn(cmd: string, args: readonly string[]): Running {
    const [c, full] = (ns as Netns).wrap(cmd, args);
    const r = start(c, full);
    running.push(r);
    return r;
  }

  it('write(2) on the tap: the guest sends one raw frame, the test reads it on the peer tap', async () => {
    for (const tender of tenders) {
      const args = [
        '--net:service=guest0',
        `--net-mac:service=${GUEST_MAC}`,
        '--mem=2',
        sptCanaryNet,
        'net-send',
      ];
      await expectFrameSent(startIn, () => inNetns(tender, args), GUEST_MAC);
    }
  });

  it('read(2) after epoll: the guest returns a frame the test sends, with its own MAC as source', async () => {
    for (const tender of tenders) {
      const guest = await expectFrameEchoed(startIn, tender, sptCanaryNet, {
        guest: GUEST_MAC,
        peer: PEER_MAC,
      });
      process.kill(guest.pid, 'SIGTERM');
      expect(await guest.exited).toMatchObject({ status: null, signal: 'SIGTERM' });
    }
  });

  it('a waiting guest reads and drops frames it has no use for, instead of spinning', async () => {
    const guest = startIn(spt, ['--net:service=guest0', '--mem=2', sptCanaryNet, 'wait', 'idle']);
    await guest.waitFor('petrel-canary idle');
    // Frames keep arriving on the guest's tap for a second (no echo comes back: exit 2).
    const frameHex = `ffffffffffff${PEER_MAC.replaceAll(':', '')}88b5${'00'.repeat(46)}`;
    const peer = startIn(tapPeer, ['peer0', 'xchg', frameHex, '88b5', GUEST_MAC, '1000']);
    expect((await peer.exited).status).toBe(2);
    // A tap holding an unread frame stays readable: a guest that does not read it spins at
    // 100 % of a core. One that reads it sleeps until its next tick.
    const before = cpuMs(guest.pid);
    const started = performance.now();
    await new Promise((r) => setTimeout(r, 1000));
    const busy = (cpuMs(guest.pid) - before) / (performance.now() - started);
    expect(busy).toBeLessThan(0.2);
    guest.stop();
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
