// The canary under petrel-hvt on a host with KVM: console, exit statuses, the bounds checks of
// solo5.md §3.12, and the machine state of §3.2-§3.7 as the guest itself reads it (regs mode).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PT_LOAD, parseElf } from './elf.js';
import { kvmUsable } from './kvm.js';
import { canary, canaryBlk, requireBuilt, runTender } from './native.js';

let dir: string;
beforeAll(() => {
  requireBuilt();
  dir = mkdtempSync(join(tmpdir(), 'petrel-hvt-canary-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.skipIf(!kvmUsable)('the canary on petrel-hvt', () => {
  it('hello hi: "petrel-canary hi", a boot-time line, exit 0, nothing on stderr', () => {
    const before = BigInt(Date.now()) * 1_000_000n;
    const r = runTender(['--mem=4', canary, 'hello', 'hi']);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const [first, second, rest] = r.stdout.split('\n');
    expect(first).toBe('petrel-canary hi');
    const m = /^petrel-canary boot_us=(\d+) walltime_ns=(\d+)$/.exec(second ?? '');
    expect(m).not.toBeNull();
    const wall = BigInt(m?.[2] ?? '0');
    expect(wall).toBeGreaterThanOrEqual(before - 1_000_000_000n);
    expect(wall).toBeLessThanOrEqual(BigInt(Date.now()) * 1_000_000n + 1_000_000_000n);
    expect(rest).toBe('');
  });

  it('without arguments it says hello; launcher words are ignored', () => {
    expect(runTender(['--mem=2', canary]).stdout).toMatch(/^petrel-canary hello\n/);
    const r = runTender(['--mem=2', canary, '--name=vm1', '--solo5:quiet', 'hello', 'there']);
    expect(r.stdout).toMatch(/^petrel-canary there\n/);
  });

  it.each([
    ['42', 42],
    ['0', 0],
    ['300', 44],
    ['256', 0],
    ['-1', 255],
  ])('exit %s: the tender exits with the status & 0xff (%i)', (n, status) => {
    const r = runTender(['--mem=2', canary, 'exit', n]);
    expect(r).toMatchObject({ status, stdout: '', stderr: '' });
  });

  it('an unknown mode halts with 2', () => {
    const r = runTender(['--mem=2', canary, 'no-such-mode']);
    expect(r).toMatchObject({ status: 2, stdout: 'petrel-canary unknown mode no-such-mode\n' });
  });

  it('flood: every numbered line arrives, in order', () => {
    const r = runTender(['--mem=2', canary, 'flood', '3000'], 120_000);
    expect(r.status).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines.pop()).toBe('');
    expect(lines).toEqual(Array.from({ length: 3000 }, (_, i) => `petrel-canary flood ${i + 1}`));
  });

  it('sleep 2: a tick a second (POLL as a sleep), then exit 0', () => {
    const t0 = performance.now();
    const r = runTender(['--mem=2', canary, 'sleep', '2']);
    const ms = performance.now() - t0;
    expect(r).toMatchObject({ status: 0, stdout: 'petrel-canary tick 1\npetrel-canary tick 2\n' });
    expect(ms).toBeGreaterThanOrEqual(1900);
    expect(ms).toBeLessThan(10_000);
  });

  it.each([
    ['puts', 'PUTS data: Invalid guest access: gpa=0x200000, sz=16', ''],
    ['struct', 'PUTS: Invalid guest access: gpa=0x1ffff8, sz=16', ''],
    ['halt', 'HALT cookie: Invalid guest access: gpa=0x1fff00, sz=512', ''],
    // 3 bytes ending one byte short of the top are printed; 4 ending on the last byte are not.
    ['edge', 'PUTS data: Invalid guest access: gpa=0x1ffffc, sz=4', '\0\0\0'],
  ])('oob %s: exit 1 with the bounds message, the tender intact', (what, message, extra) => {
    const r = runTender(['--mem=2', canary, 'oob', what]);
    expect(r.stdout).toBe(`petrel-canary ${what}\n${extra}`);
    expect(r.stderr).toBe(`petrel-hvt: ${message}\n`);
    expect(r.status).toBe(1);
    expect(r.signal).toBeNull();
  });
});

/** FNV-1a 64 of bytes, as the canary hashes the low memory it read. */
function fnv1a(bytes: Buffer): string {
  let h = 0xcbf29ce484222325n;
  for (const b of bytes) h = BigInt.asUintN(64, (h ^ BigInt(b)) * 0x100000001b3n);
  return `0x${h.toString(16)}`;
}

/** Guest physical 0x1000-0x8FFF as §3.3 and §3.4 specify it for a memory size. */
function lowMemory(memSize: number): Buffer {
  const b = Buffer.alloc(0x8000);
  const put = (gpa: number, v: bigint) => b.writeBigUInt64LE(v, gpa - 0x1000);
  put(0x1008, 0x00af99000000ffffn);
  put(0x1010, 0x00cf93000000ffffn);
  put(0x2000, 0x3003n);
  for (let i = 0; i < 4; i++) put(0x3000 + i * 8, BigInt(0x4003 + i * 0x1000));
  put(0x4000, 0x8003n);
  for (let k = 1; k < memSize / 0x200000; k++) put(0x4000 + k * 8, BigInt(k * 0x200000) | 0x83n);
  for (let i = 0x10; i < 0x200; i++) put(0x8000 + i * 8, BigInt(i * 0x1000) | (i >= 0x100 ? 0x3n : 0x1n));
  return b;
}

const hex = (n: number | bigint) => `0x${n.toString(16)}`;

function kernelEnd(image: string): number {
  const elf = parseElf(readFileSync(image));
  return Math.max(
    ...elf.phdrs
      .filter((p) => p.type === PT_LOAD && p.filesz > 0)
      .map((p) => Math.ceil((p.vaddr + p.memsz) / p.align) * p.align),
  );
}

describe.skipIf(!kvmUsable)('regs: the initial state of solo5.md §3', () => {
  it.each([
    [8, canary, 1],
    [4096, canary, 1],
    [2, canaryBlk, 2],
  ])('--mem=%i, %s', (mem, image, entries) => {
    const memSize = mem * 0x100000;
    const args = ['--mem', String(mem)].join('=');
    const extra: string[] = [];
    if (entries === 2) {
      const disk = join(dir, 'regs.img');
      writeFileSync(disk, Buffer.alloc(512));
      extra.push(`--block:storage=${disk}`);
    }
    const r = runTender([args, ...extra, image, 'regs', 'a', '', 'b'], 60_000);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const got = new Map(
      r.stdout
        .split('\n')
        .filter((l) => l.includes('='))
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)] as const),
    );
    const mapped = memSize / 0x200000;
    const mft = 0x10038;
    const expected: Record<string, string> = {
      cr0: '0x80010021',
      cr2: '0x0',
      cr3: '0x2000',
      cr4: '0x620',
      efer: '0x500',
      fs_base: '0x0',
      gs_base: '0x0',
      'gdtr.base': '0x1000',
      'gdtr.limit': '0x17',
      'idtr.base': '0x0',
      'idtr.limit': '0x0',
      cs: '0x8',
      ds: '0x10',
      es: '0x10',
      fs: '0x10',
      gs: '0x10',
      ss: '0x10',
      tr: '0x0',
      ldtr: '0x0',
      'fpu.cw': '0x37f',
      entry: hex(parseElf(readFileSync(image)).entry),
      rax: '0x0',
      rbx: '0x0',
      rcx: '0x0',
      rdx: '0x0',
      rsi: '0x0',
      rdi: '0x10000',
      rbp: '0x0',
      rsp: hex(memSize - 8),
      r8: '0x0',
      r9: '0x0',
      r10: '0x0',
      r11: '0x0',
      r12: '0x0',
      r13: '0x0',
      r14: '0x0',
      r15: '0x0',
      rflags: '0x2',
      'boot.mem_size': hex(memSize),
      'boot.kernel_end': hex(kernelEnd(image)),
      'boot.cmdline': hex(mft + 8 + 104 * entries),
      'boot.mft': hex(mft),
      'boot.host_features': '0x0',
      'boot.guest_features': '0x0',
      'boot.net_ring': '0x0',
      'mft.version': '0x1',
      'mft.entries': hex(entries),
      cmdline: 'regs a  b',
      'gdt[0]': '0x0',
      'gdt[1]': '0xaf99000000ffff',
      'gdt[2]': '0xcf93000000ffff',
      'pml4[0]': '0x3003',
      'pdpt[0]': '0x4003',
      'pdpt[1]': '0x5003',
      'pdpt[2]': '0x6003',
      'pdpt[3]': '0x7003',
      'pdpt[4]': '0x0',
      'pd[0]': '0x8003',
      'pd[1]': mapped > 1 ? hex(0x200083) : '0x0',
      [`pd[${mapped - 1}]`]: mapped > 1 ? hex((mapped - 1) * 0x200000 + 0x83) : '0x8003',
      'pt[0]': '0x0',
      'pt[15]': '0x0',
      'pt[16]': '0x10001',
      'pt[255]': '0xff001',
      'pt[256]': '0x100003',
      'pt[511]': '0x1ff003',
      'low.fnv1a': fnv1a(lowMemory(memSize)),
    };
    if (mapped < 2048) expected[`pd[${mapped}]`] = '0x0';
    for (const [key, value] of Object.entries(expected)) expect([key, got.get(key)]).toEqual([key, value]);
    const freq = BigInt(got.get('boot.cpu_cycle_freq') ?? '0');
    expect(freq).toBeGreaterThan(100_000_000n);
    expect(freq).toBeLessThan(20_000_000_000n);
  });
});
