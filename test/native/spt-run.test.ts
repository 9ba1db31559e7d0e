// Real guests under petrel-spt: the canary's code runs natively in the tender's process (no KVM),
// so everything here runs on any x86_64 Linux host. Console, exit statuses (solo5.md §1.9, spt
// column), the entry state of native/spt/ABI.md as the guest reads it, sleeping, console
// throughput, and bad pointers, which the kernel refuses without involving the tender.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseElf } from './elf.js';
import { GENERAL_REGISTERS_BUT_RDI_RSP, hex, kernelEnd, keyValues } from './layout.js';
import { start } from './native.js';
import {
  expectKilled,
  requireSptBuilt,
  runSpt,
  SPT_BOOT_INFO,
  SPT_BOOT_INFO_SIZE,
  spt,
  sptCanary,
  sptCanaryBlk,
} from './spt.js';

let dir: string;
let disk: string;
beforeAll(() => {
  requireSptBuilt();
  dir = mkdtempSync(join(tmpdir(), 'petrel-spt-run-'));
  disk = join(dir, 'disk.img');
  writeFileSync(disk, Buffer.alloc(4096));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('console and exit', () => {
  it('hello hi: "petrel-canary hi", a boot-time line, exit 0, nothing on stderr', () => {
    const before = BigInt(Date.now()) * 1_000_000n;
    const r = runSpt(['--mem=2', sptCanary, 'hello', 'hi']);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const [first, second, rest] = r.stdout.split('\n');
    expect(first).toBe('petrel-canary hi');
    const m = /^petrel-canary boot_us=(\d+) walltime_ns=(\d+)$/.exec(second ?? '');
    expect(m).not.toBeNull();
    // From the tender's main() to the guest's first instruction: well under a second.
    expect(Number(m?.[1])).toBeLessThan(1_000_000);
    const wall = BigInt(m?.[2] ?? '0');
    expect(wall).toBeGreaterThanOrEqual(before - 1_000_000_000n);
    expect(wall).toBeLessThanOrEqual(BigInt(Date.now()) * 1_000_000n + 1_000_000_000n);
    expect(rest).toBe('');
  });

  it('the default 512 MiB works, and launcher words are ignored', () => {
    expect(runSpt([sptCanary]).stdout).toMatch(/^petrel-canary hello\n/);
    const r = runSpt(['--mem=2', sptCanary, '--name=vm1', '--solo5:quiet', 'hello', 'there']);
    expect(r.stdout).toMatch(/^petrel-canary there\n/);
  });

  it.each([
    ['42', 42],
    ['0', 0],
    ['300', 44],
    ['256', 0],
    ['-1', 255],
  ])('exit %s: the tender exits with the status & 0xff (%i)', (n, status) => {
    expect(runSpt(['--mem=2', sptCanary, 'exit', n])).toMatchObject({ status, stdout: '', stderr: '' });
  });

  it('an unknown mode halts with 2', () => {
    const r = runSpt(['--mem=2', sptCanary, 'no-such-mode']);
    expect(r).toMatchObject({ status: 2, stdout: 'petrel-canary unknown mode no-such-mode\n' });
  });

  it('sleep 2: a tick a second (the timer and epoll set of the boot information), then exit 0', () => {
    const t0 = performance.now();
    const r = runSpt(['--mem=2', sptCanary, 'sleep', '2']);
    const ms = performance.now() - t0;
    expect(r).toMatchObject({
      status: 0,
      stdout: 'petrel-canary tick 1\npetrel-canary tick 2\n',
      stderr: '',
    });
    expect(ms).toBeGreaterThanOrEqual(1900);
    expect(ms).toBeLessThan(5_000);
  });

  it('flood 200000: every numbered line arrives, in order', async () => {
    const n = 200_000;
    const t0 = performance.now();
    const t = start(spt, ['--mem=2', sptCanary, 'flood', String(n)]);
    const end = await t.exited;
    const seconds = (end.at - t0) / 1000;
    expect(end).toMatchObject({ status: 0, signal: null });
    const lines = t.stdout().split('\n');
    expect(lines.pop()).toBe('');
    expect(lines.length).toBe(n);
    const wrong = lines.findIndex((line, i) => line !== `petrel-canary flood ${i + 1}`);
    expect(wrong).toBe(-1);
    const rate = Math.round(n / seconds);
    console.log(`spt flood: ${n} lines in ${seconds.toFixed(3)} s, ${rate} lines/s (to a Node pipe)`);
    expect(rate).toBeGreaterThan(20_000);
  }, 60_000);
});

describe('the entry state (ABI.md "Entry"), read by the guest itself', () => {
  it.each([
    [2, sptCanary, [] as string[]],
    [64, sptCanaryBlk, ['block']],
  ])('--mem=%i, %s', (mem, image, devices) => {
    const memSize = mem * 0x100000;
    const args = devices.length > 0 ? [`--block:storage=${disk}`] : [];
    const r = runSpt([`--mem=${mem}`, ...args, image, 'regs', 'a', '', 'b']);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const got = keyValues(r.stdout);
    const entries = devices.length + 1;
    const mft = SPT_BOOT_INFO + SPT_BOOT_INFO_SIZE;
    const expected: Record<string, string> = {
      entry: hex(parseElf(readFileSync(image)).entry),
      rdi: hex(SPT_BOOT_INFO),
      rsp: hex(memSize - 8),
      rflags: '0x202',
      cs: '0x33',
      ss: '0x2b',
      'boot.mem_size': hex(memSize),
      'boot.kernel_end': hex(kernelEnd(image)),
      'boot.mft': hex(mft),
      'boot.cmdline': hex(mft + 8 + 104 * entries),
      'mft.version': '0x1',
      'mft.entries': hex(entries),
    };
    for (const reg of GENERAL_REGISTERS_BUT_RDI_RSP) expected[reg] = '0x0';
    for (const [key, value] of Object.entries(expected)) expect([key, got.get(key)]).toEqual([key, value]);
    expect(r.stdout).toContain('\ncmdline=regs a  b\n');
    const epoll = Number(got.get('boot.epoll_fd'));
    const timer = Number(got.get('boot.timer_fd'));
    expect(epoll).toBeGreaterThan(2);
    expect(timer).toBeGreaterThan(2);
    expect(timer).not.toBe(epoll);
    expect(r.stdout).toContain('\nmft[0]= attached=0 fd=0\n');
    if (entries === 2) {
      const m = /^mft\[1\]=storage attached=1 fd=(\d+)$/m.exec(r.stdout);
      expect(Number(m?.[1])).toBeGreaterThan(2);
      expect([epoll, timer]).not.toContain(Number(m?.[1]));
    }
  });
});

describe('faults and bad pointers', () => {
  it.each(['puts', 'null', 'kernel'])(
    'oob %s: write(2) of a pointer outside guest memory returns EFAULT; the guest goes on and exits 0',
    (what) => {
      const r = runSpt(['--mem=2', sptCanary, 'oob', what]);
      expect(r).toMatchObject({
        status: 0,
        signal: null,
        stderr: '',
        stdout: `petrel-canary ${what}\npetrel-canary oob write=-14 (EFAULT)\n`,
      });
    },
  );

  it.each([
    ['boot', 'a write to the read-only boot information'],
    ['text', "a write to the guest's own code"],
    ['guard', 'a read of the inaccessible first page at 0x10000'],
    ['stack', 'code executed on the stack'],
  ])('fault %s (%s): killed by SIGSEGV (139), as solo5-spt', (what) => {
    const r = runSpt(['--mem=2', sptCanary, 'fault', what]);
    expectKilled(r, 'SIGSEGV');
    expect(r.stdout).toBe(`petrel-canary ${what}\n`);
  });

  it('with --x-exec-heap, code on the stack runs', () => {
    const r = runSpt(['--x-exec-heap', '--mem=2', sptCanary, 'fault', 'stack']);
    expect(r).toMatchObject({ status: 3, stdout: 'petrel-canary stack\npetrel-canary fault survived\n' });
  });
});
