// A test-local ELF64 reader: just enough to check the canary's layout and Solo5 notes against
// solo5.md §2 and §4, and to find the bytes the negative tests patch. Little-endian only.

export const PT_LOAD = 1;
export const PT_INTERP = 3;
export const PT_NOTE = 4;
export const PT_TLS = 7;
export const PF_X = 1;
export const PF_W = 2;
export const PF_R = 4;

export interface ProgramHeader {
  index: number;
  /** File offset of this program header itself (for patching). */
  at: number;
  type: number;
  flags: number;
  offset: number;
  vaddr: number;
  filesz: number;
  memsz: number;
  align: number;
}

export interface Section {
  name: string;
  type: number;
  offset: number;
  addr: number;
  size: number;
}

export interface Note {
  /** Index of the PT_NOTE program header whose segment starts with this note. */
  phdr: number;
  /** File offset of the note header. */
  at: number;
  namesz: number;
  descsz: number;
  type: number;
  name: string;
  /** The whole note as in the file: header, name, descriptor. */
  bytes: Buffer;
}

export interface Elf {
  type: number;
  machine: number;
  entry: number;
  phdrs: ProgramHeader[];
  sections: Section[];
  /** The first note of each PT_NOTE segment: the only notes solo5's tenders look at (§2.1). */
  notes: Note[];
}

function u64(b: Buffer, at: number): number {
  const v = b.readBigUInt64LE(at);
  if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new Error(`value at ${at} too large`);
  return Number(v);
}

export function parseElf(b: Buffer): Elf {
  if (b.length < 64 || b.readUInt32BE(0) !== 0x7f454c46) throw new Error('not an ELF file');
  if (b[4] !== 2 || b[5] !== 1) throw new Error('not ELF64 little-endian');
  const phoff = u64(b, 32);
  const shoff = u64(b, 40);
  const phentsize = b.readUInt16LE(54);
  const phnum = b.readUInt16LE(56);
  const shentsize = b.readUInt16LE(58);
  const shnum = b.readUInt16LE(60);
  const shstrndx = b.readUInt16LE(62);

  const phdrs: ProgramHeader[] = [];
  for (let i = 0; i < phnum; i++) {
    const at = phoff + i * phentsize;
    phdrs.push({
      index: i,
      at,
      type: b.readUInt32LE(at),
      flags: b.readUInt32LE(at + 4),
      offset: u64(b, at + 8),
      vaddr: u64(b, at + 16),
      filesz: u64(b, at + 32),
      memsz: u64(b, at + 40),
      align: u64(b, at + 48),
    });
  }

  const raw: (Omit<Section, 'name'> & { nameOff: number })[] = [];
  for (let i = 0; i < shnum; i++) {
    const at = shoff + i * shentsize;
    raw.push({
      nameOff: b.readUInt32LE(at),
      type: b.readUInt32LE(at + 4),
      addr: u64(b, at + 16),
      offset: u64(b, at + 24),
      size: u64(b, at + 32),
    });
  }
  const strtab = raw[shstrndx];
  const sections: Section[] = raw.map((s) => {
    const start = (strtab?.offset ?? 0) + s.nameOff;
    const end = b.indexOf(0, start);
    return {
      name: b.toString('latin1', start, end),
      type: s.type,
      offset: s.offset,
      addr: s.addr,
      size: s.size,
    };
  });

  const notes: Note[] = [];
  for (const p of phdrs) {
    if (p.type !== PT_NOTE || p.filesz < 12) continue;
    const namesz = b.readUInt32LE(p.offset);
    const descsz = b.readUInt32LE(p.offset + 4);
    const type = b.readUInt32LE(p.offset + 8);
    const nameEnd = 12 + Math.ceil(namesz / 4) * 4;
    const descEnd = nameEnd + Math.ceil(descsz / 4) * 4;
    notes.push({
      phdr: p.index,
      at: p.offset,
      namesz,
      descsz,
      type,
      name: b.toString('latin1', p.offset + 12, p.offset + 12 + namesz),
      bytes: b.subarray(p.offset, p.offset + descEnd),
    });
  }

  return {
    type: b.readUInt16LE(16),
    machine: b.readUInt16LE(18),
    entry: u64(b, 24),
    phdrs,
    sections,
    notes,
  };
}

export const NOTE_ABI = 0x31494241;
export const NOTE_MANIFEST = 0x3154464d;

export function solo5Note(elf: Elf, type: number): Note {
  const n = elf.notes.find((x) => x.name === 'Solo5\0' && x.type === type);
  if (!n) throw new Error(`no Solo5 note of type ${type.toString(16)}`);
  return n;
}

/**
 * The shape of an spt image's program headers as solo5's toolchain makes them (solo5-spt.md
 * §1.1), one word each: INTERP, LOAD text R+X, LOAD data RW, LOAD empty tdata at 0, TLS, LOAD
 * bss-only RW, then the notes (OpenBSD, ABI, manifest). What a header is, not where it lies.
 */
export function sptShape(elf: Elf, file: Buffer): string[] {
  const flags = (p: ProgramHeader) =>
    `${p.flags & PF_R ? 'R' : ''}${p.flags & PF_W ? 'W' : ''}${p.flags & PF_X ? 'X' : ''}`;
  return elf.phdrs.map((p) => {
    switch (p.type) {
      case PT_INTERP:
        return `INTERP ${file.toString('latin1', p.offset, p.offset + p.filesz).replace(/\0+$/u, '')}`;
      case PT_LOAD:
        if (p.filesz === 0 && p.memsz === 0) return `LOAD empty@${p.vaddr} ${flags(p)}`;
        return `LOAD ${p.filesz === 0 ? 'bss-only' : 'file'} ${flags(p)}`;
      case PT_TLS:
        return 'TLS';
      case PT_NOTE: {
        const name = file.toString('latin1', p.offset + 12, p.offset + 12 + file.readUInt32LE(p.offset));
        const type = file.readUInt32LE(p.offset + 8);
        return `NOTE ${name.replace(/\0+$/u, '')} ${type === NOTE_ABI ? 'ABI' : type === NOTE_MANIFEST ? 'MFT' : type}`;
      }
      default:
        return `type ${p.type}`;
    }
  });
}

/** The shape every solo5 0.12.1 spt image has (test_hello.spt as measured in solo5-spt.md §1.1). */
export const SOLO5_SPT_SHAPE = [
  'INTERP /nonexistent/solo5/',
  'LOAD file RX',
  'LOAD file RW',
  'LOAD empty@0 R',
  'TLS',
  'LOAD bss-only RW',
  'NOTE OpenBSD 1',
  'NOTE Solo5 ABI',
  'NOTE Solo5 MFT',
];
