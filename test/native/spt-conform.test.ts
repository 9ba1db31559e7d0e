// The conformance unikernels (native/conform, solo5-spt.md §6): one behaviour each that a drop-in
// spt tender must give an unmodified guest, built the way solo5 builds applications (stack
// protector with a global guard, SSE, thread variables, solo5's program-header layout). Each runs
// under petrel-spt and, with SOLO5_SPT set, under solo5-spt, with the same output and status.
import { readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseElf, SOLO5_SPT_SHAPE, sptShape } from './elf.js';
import { type Outcome, runSync, tapPeer } from './native.js';
import { canMakeNetns, namespaceForTests } from './netns.js';
import { scratchDir } from './scratch.js';
import {
  conform,
  conformBlk,
  conformNet,
  expectKilled,
  requireSptBuilt,
  runBoth,
  sptTenders,
} from './spt.js';

const scratch = scratchDir('petrel-spt-conform-', requireSptBuilt);

const lines = (...ls: string[]) => ls.map((l) => `${l}\n`).join('');

describe('the images', () => {
  it("have solo5's spt program-header layout, with thread variables in PT_TLS", () => {
    for (const image of [conform, conformBlk, conformNet]) {
      const file = readFileSync(image);
      const elf = parseElf(file);
      expect(sptShape(elf, file)).toEqual(SOLO5_SPT_SHAPE);
      expect(elf.phdrs.find((p) => p.type === 7)?.memsz).toBeGreaterThan(0);
    }
  });
});

describe('memory, thread-local storage, SSE', () => {
  it('globals: data initialised from the file, the bss-only segment zero, both writable', () => {
    const r = runBoth(['--mem=2', conform, 'globals']);
    expect(r).toMatchObject({
      status: 0,
      stderr: '',
      stdout: lines(
        'conform data initialised: ok',
        'conform bss zero: ok',
        'conform rodata: ok',
        'conform data and bss writable: ok',
      ),
    });
  });

  it('tls: arch_prctl(ARCH_SET_FS) switches between two thread blocks, each keeping its values', () => {
    const r = runBoth(['--mem=2', conform, 'tls']);
    expect(r.stdout).not.toContain('FAILED');
    expect(r.stdout).toContain('conform block a kept its values: ok\nconform arch_prctl(ARCH_SET_FS): ok\n');
    expect(r.stdout.endsWith('conform block b kept its values: ok\n')).toBe(true);
    expect(r).toMatchObject({ status: 0, stderr: '' });
  });

  it('tls before: a thread variable while FS base is 0 faults, SIGSEGV (139)', () => {
    const r = runBoth(['--mem=2', conform, 'tls', 'before']);
    expectKilled(r, 'SIGSEGV');
    expect(r.stdout).toBe('conform tls: a thread variable with FS base 0\n');
  });

  it('fpu: SSE arithmetic gives IEEE results, with every exception masked', () => {
    const r = runBoth(['--mem=2', conform, 'fpu']);
    expect(r).toMatchObject({
      status: 0,
      stdout: lines(
        'conform MXCSR exceptions masked: ok',
        'conform scalar double: ok',
        'conform sqrt: ok',
        'conform packed double: ok',
        'conform 1/0 is infinity: ok',
      ),
    });
  });
});

describe('how guests end', () => {
  it('ssp: a stack buffer overrun is caught by the stack protector, exit 255', () => {
    const r = runBoth(['--mem=2', conform, 'ssp']);
    expect(r).toMatchObject({
      status: 255,
      signal: null,
      stderr: '',
      stdout: lines(
        'conform guard set: ok',
        'conform ssp: overrunning a stack buffer',
        'conform ssp: stack corruption detected',
      ),
    });
  });

  it.each([
    ['syscall', 'SIGSYS', 'dup(1), not on the allow-list'],
    ['null', 'SIGSEGV', 'a read of address 0'],
    ['return', 'SIGSEGV', 'returning from the entry function, to address 0'],
  ] as const)('fault %s: %s (%s)', (what, signal, _why) => {
    const r = runBoth(['--mem=2', conform, 'fault', what]);
    expectKilled(r, signal);
    expect(r.stdout).toBe(`conform fault: ${what}\n`);
  });

  it('an unknown mode halts 2', () => {
    expect(runBoth(['--mem=2', conform, 'nope'])).toMatchObject({
      status: 2,
      stdout: 'conform no such mode\n',
    });
  });
});

describe('block device', () => {
  it.each([512, 4096])(
    'sector size %i: sectors 0, 1 and the last written and read back; out-of-bounds requests refused',
    (size) => {
      const file = scratch.path(`blk-${size}.img`);
      const capacity = 64 * 1024;
      const args = [
        `--block:storage=${file}`,
        `--block-sector-size:storage=${size}`,
        '--mem=2',
        conformBlk,
        'blk',
      ];
      const r = runBoth(args, {
        run: (tender) => {
          writeFileSync(file, Buffer.alloc(capacity));
          const out = runSync(tender, args);
          const disk = readFileSync(file);
          const sectors = capacity / size;
          for (let s = 0; s < sectors; s++) {
            const expected = Buffer.alloc(size);
            if (s === 0 || s === 1 || s === sectors - 1) expected.write(`conform sector ${s}`, 'latin1');
            expect([tender, s, disk.subarray(s * size, (s + 1) * size).equals(expected)]).toEqual([
              tender,
              s,
              true,
            ]);
          }
          return out;
        },
      });
      expect(r).toMatchObject({ status: 0, stderr: '' });
      expect(r.stdout).toBe(
        lines(
          'conform storage attached: ok',
          `conform blk: capacity=${capacity} sector_size=${size}`,
          'conform capacity whole sectors: ok',
          ...Array(3).fill('conform write: ok'),
          ...Array(3).fill('conform read back: ok'),
          'conform read at the capacity refused: ok',
          'conform write at the capacity refused: ok',
          'conform unaligned offset refused: ok',
          'conform half a sector refused: ok',
          'conform two sectors refused: ok',
        ),
      );
    },
  );
});

// Root only: the test makes its own network namespace with a bridge and two taps.
describe.skipIf(!canMakeNetns)('network device', () => {
  const { startIn } = namespaceForTests();

  it('net: a frame in through epoll and read(2), a frame out with write(2), then exit 0', async () => {
    const guestMac = '02:00:00:00:00:22';
    const peerMac = '02:00:00:00:00:21';
    const outcomes: Outcome[] = [];
    for (const tender of sptTenders) {
      const guest = startIn(tender, [
        '--net:service=guest0',
        `--net-mac:service=${guestMac}`,
        '--mem=2',
        conformNet,
        'net',
      ]);
      await guest.waitFor(`conform net: mac=${guestMac} mtu=1500\n`);
      const frame = Buffer.alloc(60);
      Buffer.from(guestMac.replaceAll(':', ''), 'hex').copy(frame, 0);
      Buffer.from(peerMac.replaceAll(':', ''), 'hex').copy(frame, 6);
      frame.writeUInt16BE(0x88b5, 12);
      frame.write('a frame for the conformance unikernel', 14, 'latin1');
      const peer = startIn(tapPeer, ['peer0', 'xchg', frame.toString('hex'), '88b5', guestMac, '15000']);
      expect((await peer.exited).status).toBe(0);
      const reply = Buffer.from(peer.stdout().split('\n')[1] ?? '', 'hex');
      expect(reply.subarray(0, 6).toString('hex')).toBe(peerMac.replaceAll(':', ''));
      expect(reply.subarray(6, 12).toString('hex')).toBe(guestMac.replaceAll(':', ''));
      expect(reply.toString('latin1', 14, 14 + 30)).toBe('conform net reply to 60 bytes\0');
      const end = await guest.exited;
      outcomes.push({
        status: end.status,
        signal: end.signal,
        stdout: guest.stdout(),
        stderr: guest.stderr(),
      });
    }
    for (const o of outcomes) {
      expect(o).toEqual({
        status: 0,
        signal: null,
        stderr: '',
        stdout: lines(
          'conform service attached: ok',
          `conform net: mac=${guestMac} mtu=1500`,
          `conform net: received 60 bytes from ${peerMac}`,
          'conform reply written: ok',
        ),
      });
    }
  });
});
