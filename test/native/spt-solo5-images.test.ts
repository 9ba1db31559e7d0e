// solo5's own spt test unikernels (v0.12.1 tests/, built elsewhere: CI has none) under
// petrel-spt: the conformance checklist of solo5-spt.md §6. Runs where SOLO5_SPT_TESTS names a
// directory holding them (test_hello.spt, ...); skipped otherwise. With SOLO5_SPT set as well,
// every run is repeated under the real solo5-spt and must end the same way with the same output.
import { existsSync, mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canary, type Outcome, runSync, tapPeer } from './native.js';
import { canMakeNetns, namespaceForTests } from './netns.js';
import { expectKilled, expectSptFailure, requireSptBuilt, runBoth, sptTenders } from './spt.js';

const tests = process.env.SOLO5_SPT_TESTS || null;
const image = (name: string) => join(tests ?? '', `test_${name}.spt`);

let dir: string;
beforeAll(() => {
  if (tests === null) return;
  requireSptBuilt();
  if (!existsSync(image('hello'))) throw new Error(`SOLO5_SPT_TESTS=${tests} holds no test_hello.spt`);
  dir = mkdtempSync(join(tmpdir(), 'petrel-spt-solo5-'));
});
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** stdout without the NUL solo5's stack-protector message ends with (§3.6). */
const out = (r: Outcome) => r.stdout.replaceAll('\0', '');
const same = { sameStderr: true };

describe.skipIf(tests === null)("solo5's test unikernels (solo5-spt.md §6)", () => {
  it('1, 2: test_hello with and without a command line', () => {
    const r = runBoth(['--mem=2', image('hello'), 'Hello_Solo5']);
    expect(r.status).toBe(0);
    for (const text of [
      'Solo5:       text @ (0x100000 - 0x102fff)',
      'Solo5:     rodata @ (0x103000 - 0x103fff)',
      'Solo5:       data @ (0x104000 - 0x105fff)',
      'Solo5:       heap >= 0x106000 < stack < 0x200000',
      "Hello, World\nCommand line is: 'Hello_Solo5'\nSUCCESS\nSolo5: solo5_exit(0) called\n",
    ])
      expect(out(r)).toContain(text);
    expect(out(runBoth(['--mem=2', image('hello')]))).toContain("Command line is: ''\n");
  });

  it('3, 4: --solo5:quiet leaves no Solo5 line; long console lines arrive intact', () => {
    const quiet = runBoth(['--mem=2', '--', image('quiet'), '--solo5:quiet']);
    expect(quiet.status).toBe(0);
    expect(out(quiet)).toContain('SUCCESS');
    expect(out(quiet)).not.toContain('Solo5:');
    const output = runBoth(['--mem=2', image('output'), 'Output_Solo5']);
    expect(output.status).toBe(0);
    expect(out(output)).toContain(
      '**** Solo5 standalone test_output **** (4143 characters)\nSolo5: solo5_exit(0) called\n',
    );
  });

  it.each(['globals', 'tls', 'fpu'])('5-7: test_%s: SUCCESS, exit 0', (name) => {
    const r = runBoth(['--mem=2', image(name)]);
    expect(r).toMatchObject({ status: 0, stderr: '' });
    expect(out(r)).toContain('\nSUCCESS\n');
  });

  it('8: test_time: clocks, and timerfd + epoll sleeps of about a second each', () => {
    const t0 = performance.now();
    const r = runBoth(['--mem=2', image('time')], {
      timeoutMs: 30_000,
      compared: (stdout) => stdout.replace(/\d+ ns$/gmu, 'N ns'),
    });
    expect(r.status).toBe(0);
    expect(out(r)).toContain('SUCCESS');
    expect(performance.now() - t0).toBeGreaterThan(4_000);
  }, 70_000);

  it('9, 16: test_ssp aborts on stack corruption, test_dumpcore aborts: 255', () => {
    const ssp = runBoth(['--mem=2', image('ssp')]);
    expect(ssp.status).toBe(255);
    expect(out(ssp)).toContain('Solo5: ABORT: Stack corruption detected\n');
    const dump = runBoth(['--mem=2', image('dumpcore')]);
    expect(dump.status).toBe(255);
    expect(out(dump)).toContain('Solo5: solo5_abort() called');
  });

  it.each(['exception', 'zeropage', 'notls', 'xnow', 'wnox', 'rnow'])(
    '10-13: test_%s: SIGSEGV (139)',
    (name) => {
      expectKilled(runBoth(['--mem=2', image(name)]), 'SIGSEGV');
    },
  );

  it.each(['xnor', 'rnox'])('14: test_%s: FAILURE, exit 1 (as solo5-spt)', (name) => {
    const r = runBoth(['--mem=2', image(name)]);
    expect(r.status).toBe(1);
    expect(out(r)).toContain('FAILURE');
  });

  it('15: test_seccomp: dup(1) is killed with SIGSYS (159)', () => {
    expectKilled(runBoth(['--mem=2', image('seccomp')]), 'SIGSYS');
  });

  it('17-21, 23: test_blk on 512- and 4096-byte sectors, and the block errors', () => {
    const disk = join(dir, 'blk.img');
    writeFileSync(disk, '');
    truncateSync(disk, 4 * 1024 * 1024);
    for (const extra of [[], ['--block-sector-size:storage=4096']]) {
      const r = runBoth([`--block:storage=${disk}`, ...extra, '--mem=2', image('blk')]);
      expect(r.status).toBe(0);
      expect(out(r)).toContain('SUCCESS');
    }
    const odd = join(dir, 'odd.img');
    writeFileSync(odd, Buffer.alloc(6 * 1024));
    expectSptFailure(
      runBoth([`--block:storage=${odd}`, '--block-sector-size:storage=4096', '--mem=2', image('blk')], same),
      'storage: Backing storage size must be block aligned (4096 bytes)',
    );
    for (const size of ['521', '256']) {
      const r = runBoth(
        [`--block:storage=${disk}`, `--block-sector-size:storage=${size}`, image('blk')],
        same,
      );
      expect(r.stderr.split('\n')[0]).toBe(
        'petrel-spt: Block size must be a multiple of 2 greater than or equal 512',
      );
      expect(r.status).toBe(1);
    }
    const empty = join(dir, 'empty.img');
    writeFileSync(empty, '');
    expectSptFailure(
      runBoth([`--block:storage=${empty}`, '--mem=2', image('blk')], same),
      'storage: Backing storage must be at least 1 block (512 bytes) in size',
    );
    const missing = runBoth(['--mem=2', image('blk')], same);
    expect(missing.stderr).toBe(
      "petrel-spt: Device 'storage' of type BLOCK_BASIC declared but not attached.\n" +
        'petrel-spt: All declared devices must be attached. See --help for syntax.\n',
    );
  });

  it('22: test_mft_maxdevices with 63 block devices (a 64-entry manifest, 63 descriptors in the filter)', () => {
    const disk = join(dir, 'max.img');
    writeFileSync(disk, Buffer.alloc(512));
    const devices = Array.from({ length: 63 }, (_, i) => `--block:storage${i}=${disk}`);
    const r = runBoth([...devices, '--mem=2', '--', image('mft_maxdevices')]);
    expect(r.status).toBe(0);
    expect(out(r)).toContain('SUCCESS');
  });

  it('26, 29, 30: test_net without --net; an hvt image; --mem=1', () => {
    expect(runBoth(['--mem=2', image('net')], same).stderr).toContain(
      "petrel-spt: Device 'service0' of type NET_BASIC declared but not attached.\n",
    );
    expectSptFailure(
      runBoth(['--mem=2', canary], same),
      `${canary}: Executable is not for the solo5-spt target`,
    );
    expectSptFailure(
      runBoth(['--mem=1', image('hello')], same),
      `${image('hello')}: invalid executable: e_entry does not fall within the memory allocation range (1048608 < 1048576 || 1048608 >= 1048576)`,
    );
  });
});

// 24, 25: frames through a tap in a namespace this file makes (root only).
describe.skipIf(tests === null || !canMakeNetns)(
  "solo5's network test unikernels (solo5-spt.md §6 rows 24, 25)",
  () => {
    const GUEST_MAC = '02:00:00:00:00:32';
    const PEER_MAC = '02:00:00:00:00:31';
    const { startIn, wrap } = namespaceForTests();
    const mac = (m: string) => Buffer.from(m.replaceAll(':', ''), 'hex');
    const ip = (a: string) => Buffer.from(a.split('.').map(Number));
    const checksum = (b: Buffer) => {
      let sum = 0;
      for (let i = 0; i < b.length; i += 2) sum += (b[i] ?? 0) * 256 + (b[i + 1] ?? 0);
      while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
      return ~sum & 0xffff;
    };
    /** A frame from the peer tap and the guest's answer of that EtherType, both as Buffers. */
    async function exchange(frame: Buffer, ethertype: string): Promise<Buffer> {
      const peer = startIn(tapPeer, ['peer0', 'xchg', frame.toString('hex'), ethertype, GUEST_MAC, '15000']);
      expect((await peer.exited).status).toBe(0);
      return Buffer.from(peer.stdout().split('\n')[1] ?? '', 'hex');
    }

    it('24: test_net answers ARP for 10.0.0.2 and an ICMP echo request', async () => {
      for (const tender of sptTenders) {
        const guest = startIn(tender, [
          '--net:service0=guest0',
          `--net-mac:service0=${GUEST_MAC}`,
          '--mem=2',
          '--',
          image('net'),
        ]);
        await guest.waitFor(`Serving ping on 10.0.0.2, with MAC: ${GUEST_MAC.replaceAll(':', '')}`);
        const arp = Buffer.concat([
          Buffer.alloc(6, 0xff),
          mac(PEER_MAC),
          Buffer.from([0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 1]),
          mac(PEER_MAC),
          ip('10.0.0.1'),
          Buffer.alloc(6),
          ip('10.0.0.2'),
        ]);
        const reply = await exchange(arp, '0806');
        expect(reply.readUInt16BE(20)).toBe(2); // ARP reply
        expect(reply.subarray(22, 32)).toEqual(Buffer.concat([mac(GUEST_MAC), ip('10.0.0.2')]));

        const icmp = Buffer.concat([
          Buffer.from([8, 0, 0, 0, 0x12, 0x34, 0, 1]),
          Buffer.from('petrel ping payload'),
        ]);
        icmp.writeUInt16BE(checksum(icmp), 2);
        const ipHeader = Buffer.concat([
          Buffer.from([0x45, 0, 0, 20 + icmp.length, 0, 0, 0x40, 0, 64, 1, 0, 0]),
          ip('10.0.0.1'),
          ip('10.0.0.2'),
        ]);
        ipHeader.writeUInt16BE(checksum(ipHeader), 10);
        const echo = await exchange(
          Buffer.concat([mac(GUEST_MAC), mac(PEER_MAC), Buffer.from([8, 0]), ipHeader, icmp]),
          '0800',
        );
        expect(echo[14 + 9]).toBe(1); // ICMP
        expect(echo[14 + 20]).toBe(0); // echo reply
        expect(echo.subarray(14 + 24, 14 + 28)).toEqual(Buffer.from([0x12, 0x34, 0, 1]));
        expect(echo.toString('latin1', 14 + 28, 14 + 28 + 19)).toBe('petrel ping payload');
        process.kill(guest.pid, 'SIGTERM');
        expect(await guest.exited).toMatchObject({ signal: 'SIGTERM' });
      }
    });

    it('25: test_net_mtu reads an MTU of 9000 from the manifest', () => {
      const [c, args] = wrap('ip', ['link', 'set', 'guest0', 'mtu', '9000']);
      expect(runSync(c, args).status).toBe(0);
      const r = runBoth(['--net:service0=guest0', '--mem=2', '--', image('net_mtu')], {
        run: (tender) => {
          const [cmd, full] = wrap(tender, ['--net:service0=guest0', '--mem=2', '--', image('net_mtu')]);
          return runSync(cmd, full);
        },
      });
      expect(r.status).toBe(0);
      expect(out(r)).toContain('MTU is 9000');
      expect(out(r)).toContain('SUCCESS');
    });
  },
);
