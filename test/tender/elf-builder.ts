// A tiny ELF64 writer for tests: an x86_64 executable header, program headers and PT_NOTE
// segments holding the notes a test asks for, so every malformed case can be made on purpose.

export const PT_LOAD = 1;
export const PT_NOTE = 4;
export const ABI1 = 0x31494241;
export const MFT1 = 0x3154464d;
export const BLOCK_BASIC = 1;
export const NET_BASIC = 2;
export const RESERVED_FIRST = 0x40000000;

export interface NoteSpec {
  readonly type: number;
  readonly desc: Uint8Array;
  /** Owner name including its NUL; default `Solo5\0`. */
  readonly owner?: string;
  /** Written instead of desc.length. */
  readonly descsz?: number;
}

export interface SegmentSpec {
  readonly notes: readonly NoteSpec[];
  /** Written instead of the notes' length. */
  readonly filesz?: number;
  readonly type?: number;
  /** Written instead of the real offset. */
  readonly offset?: number;
}

export interface HeaderSpec {
  readonly elfClass?: number;
  readonly data?: number;
  readonly type?: number;
  readonly machine?: number;
  readonly version?: number;
  readonly ehsize?: number;
  readonly phentsize?: number;
  readonly phnum?: number;
}

const align4 = (n: number): number => (n + 3) & ~3;

function encodeNote(note: NoteSpec): Uint8Array {
  const owner = Buffer.from(note.owner ?? 'Solo5\0', 'latin1');
  const out = Buffer.alloc(12 + align4(owner.length) + align4(note.desc.length));
  out.writeUInt32LE(owner.length, 0);
  out.writeUInt32LE(note.descsz ?? note.desc.length, 4);
  out.writeUInt32LE(note.type, 8);
  owner.copy(out, 12);
  Buffer.from(note.desc).copy(out, 12 + align4(owner.length));
  return out;
}

/** An ELF64 little-endian x86_64 ET_EXEC with one program header per segment. */
export function buildElf(segments: readonly SegmentSpec[], header: HeaderSpec = {}): Buffer {
  const phoff = 64;
  let dataOffset = phoff + segments.length * 56;
  const bodies = segments.map((s) => Buffer.concat(s.notes.map(encodeNote)));
  const ehdr = Buffer.alloc(64);
  ehdr.write('\x7fELF', 0, 'latin1');
  ehdr[4] = header.elfClass ?? 2;
  ehdr[5] = header.data ?? 1;
  ehdr[6] = 1;
  ehdr.writeUInt16LE(header.type ?? 2, 16);
  ehdr.writeUInt16LE(header.machine ?? 62, 18);
  ehdr.writeUInt32LE(header.version ?? 1, 20);
  ehdr.writeBigUInt64LE(0x100000n, 24);
  ehdr.writeBigUInt64LE(BigInt(phoff), 32);
  ehdr.writeUInt16LE(header.ehsize ?? 64, 52);
  ehdr.writeUInt16LE(header.phentsize ?? 56, 54);
  ehdr.writeUInt16LE(header.phnum ?? segments.length, 56);
  const phdrs = segments.map((s, i) => {
    const ph = Buffer.alloc(56);
    const body = bodies[i] ?? Buffer.alloc(0);
    ph.writeUInt32LE(s.type ?? PT_NOTE, 0);
    ph.writeUInt32LE(4, 4);
    ph.writeBigUInt64LE(BigInt(s.offset ?? dataOffset), 8);
    ph.writeBigUInt64LE(BigInt(s.filesz ?? body.length), 32);
    ph.writeBigUInt64LE(4n, 48);
    dataOffset += body.length;
    return ph;
  });
  return Buffer.concat([ehdr, ...phdrs, ...bodies]);
}

/** The 16-byte ABI descriptor. */
export function abiDesc(target: number, version: number, reserved0 = 0, reserved1 = 0): Buffer {
  const d = Buffer.alloc(16);
  d.writeUInt32LE(target, 0);
  d.writeUInt32LE(version, 4);
  d.writeUInt32LE(reserved0, 8);
  d.writeUInt32LE(reserved1, 12);
  return d;
}

export interface EntrySpec {
  readonly name: string | Buffer;
  readonly type: number;
  readonly attached?: number;
  /** A non-zero byte at this offset of the entry (to test the zero fields). */
  readonly poke?: number;
}

/**
 * Manifest descriptor: 4 padding bytes, version, entry count, entries. The RESERVED_FIRST
 * entry is prepended unless `raw` is set.
 */
export function manifestDesc(
  entries: readonly EntrySpec[],
  options: { readonly version?: number; readonly count?: number; readonly raw?: boolean } = {},
): Buffer {
  const all: EntrySpec[] =
    options.raw === true ? [...entries] : [{ name: '', type: RESERVED_FIRST }, ...entries];
  const d = Buffer.alloc(12 + 104 * all.length);
  d.writeUInt32LE(options.version ?? 1, 4);
  d.writeUInt32LE(options.count ?? all.length, 8);
  all.forEach((e, i) => {
    const at = 12 + 104 * i;
    (typeof e.name === 'string' ? Buffer.from(e.name, 'latin1') : e.name).copy(d, at, 0, 68);
    d.writeUInt32LE(e.type, at + 68);
    d[at + 96] = e.attached ?? 0;
    if (e.poke !== undefined) d[at + e.poke] = 1;
  });
  return d;
}

/** A well-formed image: each note in its own PT_NOTE, after a .bss-like PT_LOAD. */
export function solo5Image(
  target: number,
  version: number,
  devices: readonly { readonly name: string; readonly type: number }[],
): Buffer {
  return buildElf([
    { type: PT_LOAD, notes: [] },
    { notes: [{ type: ABI1, desc: abiDesc(target, version) }] },
    { notes: [{ type: MFT1, desc: manifestDesc(devices) }] },
  ]);
}
