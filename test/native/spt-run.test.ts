// Real guests under petrel-spt: the canary's code runs natively in the tender's process (no KVM),
// so everything here runs on any x86_64 Linux host. Console, exit statuses (solo5-spt.md §5.4),
// the entry state and boot information of §2.4-§2.6 as the guest reads it, sleeping, console
// throughput, faults (SIGSEGV, 139), and bad pointers, which the kernel refuses without involving
// the tender. With SOLO5_SPT set, every run is repeated under the real solo5-spt (runBoth).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseElf } from './elf.js';
import { GENERAL_REGISTERS_BUT_RDI_RSP, hex, kernelEnd, keyValues } from './layout.js';
import { EXIT_STATUSES, runSync, start } from './native.js';
import { scratchDir } from './scratch.js';
import {
  expectKilled,
  requireSptBuilt,
  runBoth,
  runSpt,
  SPT_BOOT_INFO,
  SPT_BOOT_INFO_SIZE,
  solo5Spt,
  spt,
  sptCanary,
  sptCanaryBlk,
} from './spt.js';

const scratch = scratchDir('petrel-spt-run-', requireSptBuilt, 4096);

describe('console and exit', () => {
  it('hello hi: "petrel-canary hi", then when the guest began on the host\'s own clock, exit 0', () => {
    // Under ABI 2 the tender passes no start time; the guest reports CLOCK_MONOTONIC at its first
    // C instruction, which is the host's clock (Node's hrtime is CLOCK_MONOTONIC too).
    for (const tender of solo5Spt === null ? [spt] : [spt, solo5Spt]) {
      const spawned = process.hrtime.bigint();
      const before = BigInt(Date.now()) * 1_000_000n;
      const r = runSync(tender, ['--mem=2', sptCanary, 'hello', 'hi']);
      const ended = process.hrtime.bigint();
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      const [first, second, rest] = r.stdout.split('\n');
      expect(first).toBe('petrel-canary hi');
      const m = /^petrel-canary entry_ns=(\d+) walltime_ns=(\d+)$/.exec(second ?? '');
      expect(m).not.toBeNull();
      const entry = BigInt(m?.[1] ?? '0');
      expect(entry).toBeGreaterThan(spawned);
      expect(entry).toBeLessThan(ended);
      console.log(`${tender}: spawn to the guest's first instruction ${Number(entry - spawned) / 1000} µs`);
      const wall = BigInt(m?.[2] ?? '0');
      expect(wall).toBeGreaterThanOrEqual(before - 1_000_000_000n);
      expect(wall).toBeLessThanOrEqual(BigInt(Date.now()) * 1_000_000n + 1_000_000_000n);
      expect(rest).toBe('');
    }
  });

  it('the default 512 MiB works, and launcher words are ignored', () => {
    expect(runSpt([sptCanary]).stdout).toMatch(/^petrel-canary hello\n/);
    const r = runBoth(['--mem=2', sptCanary, '--name=vm1', '--solo5:quiet', 'exit', '9']);
    expect(r.status).toBe(9);
  });

  it.each(EXIT_STATUSES)('exit %s: the tender exits with the status & 0xff (%i)', (n, status) => {
    expect(runBoth(['--mem=2', sptCanary, 'exit', n])).toMatchObject({ status, stdout: '', stderr: '' });
  });

  it('an unknown mode halts with 2', () => {
    const r = runBoth(['--mem=2', sptCanary, 'no-such-mode']);
    expect(r).toMatchObject({ status: 2, stdout: 'petrel-canary unknown mode no-such-mode\n' });
  });

  it('sleep 2: a tick a second (the timer and epoll set of the boot information), then exit 0', () => {
    const r = runBoth(['--mem=2', sptCanary, 'sleep', '2'], {
      run: (tender) => {
        const t0 = performance.now();
        const out = runSync(tender, ['--mem=2', sptCanary, 'sleep', '2']);
        const ms = performance.now() - t0;
        expect(ms).toBeGreaterThanOrEqual(1900);
        expect(ms).toBeLessThan(5_000);
        return out;
      },
    });
    expect(r).toMatchObject({
      status: 0,
      stdout: 'petrel-canary tick 1\npetrel-canary tick 2\n',
      stderr: '',
    });
  });

  it('flood 200000: every numbered line arrives, in order', async () => {
    const n = 200_000;
    for (const tender of solo5Spt === null ? [spt] : [spt, solo5Spt]) {
      const t0 = performance.now();
      const t = start(tender, ['--mem=2', sptCanary, 'flood', String(n)]);
      const end = await t.exited;
      const seconds = (end.at - t0) / 1000;
      expect(end).toMatchObject({ status: 0, signal: null });
      const lines = t.stdout().split('\n');
      expect(lines.pop()).toBe('');
      expect(lines.length).toBe(n);
      const wrong = lines.findIndex((line, i) => line !== `petrel-canary flood ${i + 1}`);
      expect(wrong).toBe(-1);
      const rate = Math.round(n / seconds);
      console.log(`${tender} flood: ${n} lines in ${seconds.toFixed(3)} s, ${rate} lines/s (to a Node pipe)`);
      expect(rate).toBeGreaterThan(20_000);
    }
  }, 60_000);
});

describe('the entry state and boot information (solo5-spt.md §2.4-§2.6), read by the guest itself', () => {
  it.each([
    [2, sptCanary, [] as string[]],
    [64, sptCanaryBlk, ['block']],
  ])('--mem=%i, %s', (mem, image, devices) => {
    const memSize = mem * 0x100000;
    const args = devices.length > 0 ? [`--block:storage=${scratch.disk}`] : [];
    const entries = devices.length + 1;
    const mft = SPT_BOOT_INFO + SPT_BOOT_INFO_SIZE;
    const entry = hex(parseElf(readFileSync(image)).entry);
    // What solo5-spt fixes (§2.5, §2.6); the descriptor numbers follow its order of opening (§2.7).
    const abi: Record<string, string> = {
      entry,
      rdi: hex(SPT_BOOT_INFO),
      rsi: entry,
      rdx: hex(SPT_BOOT_INFO),
      rsp: hex(memSize - 8),
      cs: '0x33',
      ss: '0x2b',
      'boot.mem_size': hex(memSize),
      'boot.kernel_end': hex(kernelEnd(image)),
      'boot.mft': hex(mft),
      'boot.cmdline': hex(mft + 8 + 104 * entries),
      'boot.epoll_fd': hex(3 + entries),
      'boot.timer_fd': hex(4 + entries),
      'mft.version': '0x1',
      'mft.entries': hex(entries),
      'mft[0]': ' attached=0 fd=0',
      cmdline: 'regs a  b',
    };
    if (entries === 2) abi['mft[1]'] = 'storage attached=1 fd=4';
    const regs = (tender: string) => {
      const r = runSync(tender, [`--mem=${mem}`, ...args, image, 'regs', 'a', '', 'b']);
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      const got = keyValues(r.stdout);
      for (const [key, value] of Object.entries(abi))
        expect([tender, key, got.get(key)]).toEqual([tender, key, value]);
      return got;
    };
    if (solo5Spt !== null) regs(solo5Spt);
    // Petrel's own beyond that (native/spt/launch.S): nothing of the tender in the registers.
    const got = regs(spt);
    expect(got.get('rflags')).toBe('0x202');
    for (const reg of GENERAL_REGISTERS_BUT_RDI_RSP)
      if (reg !== 'rsi' && reg !== 'rdx') expect([reg, got.get(reg)]).toEqual([reg, '0x0']);
  });
});

describe('faults and bad pointers', () => {
  it.each(['puts', 'null', 'kernel'])(
    'oob %s: write(2) of a pointer outside guest memory returns EFAULT; the guest goes on and exits 0',
    (what) => {
      const r = runBoth(['--mem=2', sptCanary, 'oob', what]);
      expect(r).toMatchObject({
        status: 0,
        signal: null,
        stderr: '',
        stdout: `petrel-canary ${what}\npetrel-canary oob write=-14 (EFAULT)\n`,
      });
    },
  );

  it.each([
    ['null', 'a read of address 0: nothing below 0x10000 is mapped'],
    ['text', "a write to the guest's own code"],
    ['data', "a jump into the guest's own data"],
    ['stack', 'code executed on the stack'],
  ])('fault %s (%s): killed by SIGSEGV (139)', (what) => {
    const r = runBoth(['--mem=2', sptCanary, 'fault', what]);
    expectKilled(r, 'SIGSEGV');
    expect(r.stdout).toBe(`petrel-canary ${what}\n`);
  });

  it('with --x-exec-heap, code on the stack runs', () => {
    const r = runBoth(['--x-exec-heap', '--mem=2', sptCanary, 'fault', 'stack']);
    expect(r).toMatchObject({ status: 3, stdout: 'petrel-canary stack\npetrel-canary fault survived\n' });
  });
});
