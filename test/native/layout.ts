// What solo5.md §3.2-§3.8 says a guest finds at entry, as "name" -> "0x..." pairs: the keys the
// canary's regs mode prints and the fake /dev/kvm dumps, so both tests check one table.
import { readFileSync } from 'node:fs';
import { PT_LOAD, parseElf } from './elf.js';

export const hex = (n: number | bigint): string => `0x${n.toString(16)}`;

/** FNV-1a 64, as the canary and the fake hash memory. */
export function fnv1a(bytes: Uint8Array): string {
  let h = 0xcbf29ce484222325n;
  for (const b of bytes) h = BigInt.asUintN(64, (h ^ BigInt(b)) * 0x100000001b3n);
  return hex(h);
}

/** The canary's blk pattern: byte j of sector s is (s * 31 + j * 7 + 0x5a) & 0xff. */
export function blkPattern(sectors: number, size: number): Buffer {
  const b = Buffer.alloc(sectors * size);
  for (let s = 0; s < sectors; s++)
    for (let j = 0; j < size; j++) b[s * size + j] = (s * 31 + j * 7 + 0x5a) & 0xff;
  return b;
}

/** Guest physical 0x1000-0x8FFF: the GDT (§3.3) and the page tables (§3.4) for a memory size. */
export function lowMemory(memSize: number): Buffer {
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

/**
 * A page-table entry the canary read (`pml4[i]`, `pdpt[i]`, `pd[i]`, `pt[i]`) less the bits the
 * CPU itself sets in entries it uses (Intel SDM vol. 3 §4.8): Accessed (0x20) in any present
 * entry, Dirty (0x40) only in one that maps a page (every `pt` entry, a `pd` entry with PS). Real
 * KVM sets them as the guest runs, the fake /dev/kvm never does. Every other bit stays, and a
 * non-present entry stays whole, so a table the tender got wrong still differs from the spec.
 */
export function withoutCpuSetBits(key: string, value: string): string {
  const entry = BigInt(value);
  if ((entry & 0x1n) === 0n) return value;
  const mapsPage = key.startsWith('pt[') || (key.startsWith('pd[') && (entry & 0x80n) !== 0n);
  return hex(entry & ~(mapsPage ? 0x60n : 0x20n));
}

/** The segments with file data (§3.6): the only ones loaded, and what decides kernel_end. */
export function loadedSegments(image: string) {
  return parseElf(readFileSync(image)).phdrs.filter((p) => p.type === PT_LOAD && p.filesz > 0);
}

export function kernelEnd(image: string): number {
  return Math.max(...loadedSegments(image).map((p) => Math.ceil((p.vaddr + p.memsz) / p.align) * p.align));
}

/** Guest memory from 0x100000 to kernel_end after loading: file bytes, zeros elsewhere. */
export function loadedImage(image: string): Buffer {
  const file = readFileSync(image);
  const mem = Buffer.alloc(kernelEnd(image) - 0x100000);
  for (const p of loadedSegments(image)) file.copy(mem, p.vaddr - 0x100000, p.offset, p.offset + p.filesz);
  return mem;
}

/** Every value §3.5 and §3.7 fix, for a guest of memSize bytes with `entries` manifest entries. */
/** The general-purpose registers the ABIs set to zero at entry (RDI and RSP carry values). */
export const GENERAL_REGISTERS_BUT_RDI_RSP = [
  'rax',
  'rbx',
  'rcx',
  'rdx',
  'rsi',
  'rbp',
  'r8',
  'r9',
  'r10',
  'r11',
  'r12',
  'r13',
  'r14',
  'r15',
] as const;

export function initialState(
  memSize: number,
  image: string,
  entries: number,
  cmdline: string,
): Record<string, string> {
  const zero = GENERAL_REGISTERS_BUT_RDI_RSP;
  return {
    cr0: '0x80010021',
    cr2: '0x0',
    cr3: '0x2000',
    cr4: '0x620',
    efer: '0x500',
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
    ...Object.fromEntries(zero.map((r) => [r, '0x0'])),
    rdi: '0x10000',
    rsp: hex(memSize - 8),
    rflags: '0x2',
    'boot.mem_size': hex(memSize),
    'boot.kernel_end': hex(kernelEnd(image)),
    'boot.cmdline': hex(0x10038 + 8 + 104 * entries),
    'boot.mft': '0x10038',
    'boot.host_features': '0x0',
    'boot.guest_features': '0x0',
    'boot.net_ring': '0x0',
    'mft.version': '0x1',
    'mft.entries': hex(entries),
    cmdline,
    'gdt[0]': '0x0',
    'gdt[1]': '0xaf99000000ffff',
    'gdt[2]': '0xcf93000000ffff',
    'low.fnv1a': fnv1a(lowMemory(memSize)),
  };
}

/** "key=value" lines into a map (the value may itself contain '='). */
export function keyValues(text: string): Map<string, string> {
  return new Map(
    text
      .split('\n')
      .filter((l) => l.includes('='))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)] as const),
  );
}
