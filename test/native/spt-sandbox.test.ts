// petrel-spt's seccomp allow-list, solo5-spt's (solo5-spt.md §4.2): a guest system call outside
// it, or with arguments outside it, kills the whole process with SIGSYS (159), before the call
// does anything. The allowed calls are exercised by every other spt test (console, clocks,
// waiting, block and tap I/O). With SOLO5_SPT set, solo5-spt must kill the same calls.
import { closeSync, openSync, readSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { fnv1a } from './layout.js';
import { scratchDir } from './scratch.js';
import { expectKilled, requireSptBuilt, runBoth, sptCanary, sptCanaryBlk } from './spt.js';

const scratch = scratchDir('petrel-spt-sandbox-', requireSptBuilt, 8 * 512);

describe('calls outside the allow-list kill the guest with SIGSYS', () => {
  it.each([
    ['getpid', 'a call not on the list'],
    ['x32', 'an allowed call (write) under its x32 number'],
    ['stderr', 'write to descriptor 2: only 1 and the taps'],
    ['highfd', 'write to descriptor 1 + 2^32: arguments are compared on all 64 bits'],
    ['clock', 'clock_gettime of a clock other than REALTIME and MONOTONIC'],
    ['getfs', 'arch_prctl(ARCH_GET_FS): the base can be set, never read'],
    ['open', 'openat of a host file'],
  ])('forbidden %s (%s)', (what) => {
    const r = runBoth(['--mem=2', sptCanary, 'forbidden', what]);
    expectKilled(r, 'SIGSYS');
    expect(r.stdout).toBe(`petrel-canary forbidden ${what}\n`);
  });

  it.each([
    ['short', 'half a sector'],
    ['past', 'the sector at the capacity'],
  ])('block I/O other than a sector inside the device: forbidden %s (%s)', (what) => {
    const r = runBoth([`--block:storage=${scratch.disk}`, '--mem=2', sptCanaryBlk, 'forbidden', what]);
    expectKilled(r, 'SIGSYS');
    expect(r.stdout).toBe(`petrel-canary forbidden ${what}\n`);
  });
});

describe('offsets beyond 4 GiB (the filter compares both 32-bit halves)', () => {
  it('a sparse 5 GiB device: the last sector is allowed, the one past it is not', () => {
    const big = scratch.path('big.img');
    writeFileSync(big, '');
    truncateSync(big, 5 * 2 ** 30);
    try {
      const r = runBoth([`--block:storage=${big}`, '--mem=2', sptCanaryBlk, 'blk', 'ends']);
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      const sectors = (5 * 2 ** 30) / 512;
      const first = Buffer.alloc(512);
      const last = Buffer.alloc(512);
      const fd = openSync(big, 'r');
      try {
        readSync(fd, first, 0, 512, 0);
        readSync(fd, last, 0, 512, 5 * 2 ** 30 - 512);
      } finally {
        closeSync(fd);
      }
      expect(r.stdout).toBe(
        `petrel-canary blk sectors=${sectors} sector_size=512 checksum=${fnv1a(Buffer.concat([first, last]))} eof_ret=2\n`,
      );
      expectKilled(
        runBoth([`--block:storage=${big}`, '--mem=2', sptCanaryBlk, 'forbidden', 'past']),
        'SIGSYS',
      );
    } finally {
      rmSync(big, { force: true });
    }
  });
});
