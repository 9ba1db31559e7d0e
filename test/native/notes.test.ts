// The canary images are valid solo5 hvt unikernels: notes byte for byte as solo5.md §2.2/§2.3
// describe them, found both by section name (Albatross) and as the first note of their own
// PT_NOTE (solo5's tenders), the layout of §4.1/§4.3, and no vector instruction anywhere (§5.5).
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  type Elf,
  NOTE_ABI,
  NOTE_MANIFEST,
  PF_W,
  PF_X,
  PT_LOAD,
  PT_NOTE,
  parseElf,
  solo5Note,
} from './elf.js';
import { canary, canaryBlk, canaryNet, requireBuilt } from './native.js';

const BLOCK_BASIC = 1;
const NET_BASIC = 2;
const RESERVED_FIRST = 0x40000000;

function u32s(...values: number[]): Buffer {
  const b = Buffer.alloc(values.length * 4);
  for (const [i, v] of values.entries()) b.writeUInt32LE(v, i * 4);
  return b;
}

const solo5Name = Buffer.from('Solo5\0\0\0', 'latin1');

/** §2.2: 36 bytes; target hvt (1), version 2, both reserved words 0. */
function abiNote(): Buffer {
  return Buffer.concat([u32s(6, 16, NOTE_ABI), solo5Name, u32s(1, 2, 0, 0)]);
}

/** §2.3: header, 4 bytes of padding, version 1, entries N, then N entries of 104 bytes. */
function manifestNote(devices: { name: string; type: number }[]): Buffer {
  const all = [{ name: '', type: RESERVED_FIRST }, ...devices];
  const entries = all.map(({ name, type }) => {
    const e = Buffer.alloc(104);
    e.write(name, 0, 'latin1');
    e.writeUInt32LE(type, 68);
    return e;
  });
  return Buffer.concat([
    u32s(6, 12 + 104 * all.length, NOTE_MANIFEST),
    solo5Name,
    u32s(0, 1, all.length),
    ...entries,
  ]);
}

const images = [
  { file: canary, devices: [] },
  { file: canaryBlk, devices: [{ name: 'storage', type: BLOCK_BASIC }] },
  { file: canaryNet, devices: [{ name: 'service', type: NET_BASIC }] },
] as const;

const loaded = (elf: Elf) => elf.phdrs.filter((p) => p.type === PT_LOAD && p.filesz > 0);

describe.each(images)('$file', ({ file, devices }) => {
  let bytes: Buffer;
  let elf: Elf;
  beforeAll(() => {
    requireBuilt();
    bytes = readFileSync(file);
    elf = parseElf(bytes);
  });

  it('carries the ABI note byte for byte, first in its own PT_NOTE and in .note.solo5.abi', () => {
    const note = solo5Note(elf, NOTE_ABI);
    expect(note.bytes.toString('hex')).toBe(abiNote().toString('hex'));
    expect(note.bytes.toString('latin1', 8, 12)).toBe('ABI1');
    expect(note.at % 4).toBe(0);
    const section = elf.sections.find((s) => s.name === '.note.solo5.abi');
    expect(section).toMatchObject({ offset: note.at, size: 36, type: 7 /* SHT_NOTE */ });
  });

  it('carries the manifest note byte for byte, first in its own PT_NOTE and in .note.solo5.manifest', () => {
    const note = solo5Note(elf, NOTE_MANIFEST);
    expect(note.bytes.toString('hex')).toBe(manifestNote([...devices]).toString('hex'));
    expect(note.bytes.toString('latin1', 8, 12)).toBe('MFT1');
    expect(note.descsz).toBe(devices.length === 0 ? 116 : 220);
    expect(note.at % 8).toBe(0);
    const section = elf.sections.find((s) => s.name === '.note.solo5.manifest');
    expect(section).toMatchObject({ offset: note.at, size: 32 + 104 * (devices.length + 1), type: 7 });
    // Each Solo5 note has a PT_NOTE of its own, holding nothing else.
    const notePhdrs = elf.phdrs.filter((p) => p.type === PT_NOTE);
    expect(notePhdrs.map((p) => p.filesz).sort((a, b) => a - b)).toEqual([
      36,
      32 + 104 * (devices.length + 1),
    ]);
  });

  it('is a static x86_64 executable laid out as §4.1 and §4.3 require', () => {
    expect(elf.type).toBe(2); // ET_EXEC, not PIE
    expect(elf.machine).toBe(62); // EM_X86_64
    expect(elf.phdrs.some((p) => p.type === 3)).toBe(false); // no PT_INTERP needed
    let end = 0x100000;
    for (const p of loaded(elf)) {
      expect(p.vaddr).toBeGreaterThanOrEqual(end); // ascending, above 1 MiB, no overlap
      expect(p.vaddr % 0x1000).toBe(0);
      expect(p.align).toBe(0x1000);
      expect((p.flags & PF_W) !== 0 && (p.flags & PF_X) !== 0).toBe(false);
      end = Math.ceil((p.vaddr + p.memsz) / 0x1000) * 0x1000;
    }
    const text = loaded(elf).find((p) => p.flags & PF_X);
    expect(text).toBeDefined();
    if (text) {
      expect(elf.entry).toBeGreaterThanOrEqual(text.vaddr);
      expect(elf.entry).toBeLessThan(text.vaddr + text.filesz);
    }
  });

  it('contains no SSE/AVX instruction (any one kills an hvt guest on kvm-pvm hosts)', () => {
    const dis = spawnSync('objdump', ['-d', file], { encoding: 'utf8' });
    expect(dis.status).toBe(0);
    expect(dis.stdout).toContain('<_start>:');
    expect(dis.stdout).not.toMatch(/%[xyz]mm\d/);
  });
});

describe('the three canary images', () => {
  it('differ only in their manifest note', () => {
    requireBuilt();
    const [base, ...others] = images.map(({ file }) => {
      const bytes = readFileSync(file);
      return { bytes, elf: parseElf(bytes) };
    });
    if (!base) throw new Error('no images');
    const mask = (x: { bytes: Buffer; elf: Elf }) =>
      loaded(x.elf).map((p) => {
        const seg = Buffer.from(x.bytes.subarray(p.offset, p.offset + p.filesz));
        const m = solo5Note(x.elf, NOTE_MANIFEST);
        // Everything from the manifest note on is the note (it is last in its segment).
        if (m.at >= p.offset && m.at < p.offset + p.filesz) return seg.subarray(0, m.at - p.offset);
        return seg;
      });
    for (const other of others) {
      expect(other.elf.entry).toBe(base.elf.entry);
      expect(loaded(other.elf).map((p) => p.vaddr)).toEqual(loaded(base.elf).map((p) => p.vaddr));
      const a = mask(base);
      const b = mask(other);
      expect(b.length).toBe(a.length);
      for (const [i, seg] of a.entries()) expect(b[i]?.equals(seg)).toBe(true);
    }
  });
});
