// Reads a solo5 image's ABI note and manifest the way the solo5 tenders do (solo5.md §2:
// through the PT_NOTE program headers), with solo5's error texts and Albatross' stricter checks.

import { constants, type FileHandle, open } from 'node:fs/promises';
import type { TenderKind } from '../resources/capabilities.js';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';

export const ABI_NOTE_TYPE = 0x31494241; // "ABI1"
export const MANIFEST_NOTE_TYPE = 0x3154464d; // "MFT1"
const PT_NOTE = 4;
const ET_EXEC = 2;
const EM_X86_64 = 62;
const EHDR_SIZE = 64;
const PHDR_SIZE = 56;
const ABI_MAX = 32;
const MANIFEST_MAX = 6668;
const MANIFEST_ENTRY_SIZE = 104;
const MANIFEST_MAX_ENTRIES = 64;
const NAME_SIZE = 68;
/** namesz, descsz and type of a note: the descriptor follows (after the name's padding). */
const NOTE_HEADER = 20;

export const MFT_BLOCK_BASIC = 1;
export const MFT_NET_BASIC = 2;
export const MFT_RESERVED_FIRST = 1 << 30;

/** solo5's ABI targets by number (solo5.md §2.2). */
export const TARGET_NAMES: Readonly<Record<number, string>> = {
  1: 'hvt',
  2: 'spt',
  3: 'virtio',
  4: 'muen',
  5: 'genode',
  6: 'xen',
};

export interface AbiNote {
  readonly target: number;
  readonly version: number;
}

export type DeviceType = 'BLOCK_BASIC' | 'NET_BASIC';

export interface ManifestDevice {
  readonly name: string;
  readonly type: DeviceType;
}

export interface Solo5Notes {
  readonly abi: AbiNote;
  /** The manifest's devices in manifest order, without the RESERVED_FIRST entry. */
  readonly devices: readonly ManifestDevice[];
}

export type ElfErrorCode =
  | 'E_ELF_INVALID'
  | 'E_ELF_NO_ABI'
  | 'E_ELF_ABI_INVALID'
  | 'E_ELF_NO_MANIFEST'
  | 'E_ELF_MANIFEST_INVALID';
export type ElfError = PetrelError<ElfErrorCode>;

type Fail = { readonly ok: false; readonly error: ElfError };

/** Bytes of the image at `start`: the whole image, or the pieces read from a file. */
interface Window {
  readonly start: number;
  readonly bytes: Uint8Array;
  readonly view: DataView;
}

const windowOf = (start: number, bytes: Uint8Array): Window => ({
  start,
  bytes,
  view: new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength),
});

/**
 * Little-endian reads at file offsets. Over a file only the header, the program headers and the
 * start of each PT_NOTE segment are loaded (see `readSolo5NotesFromFile`): every read below is
 * bounds-checked against the file's length first, and lies in one of those pieces.
 */
class Reader {
  readonly length: number;
  readonly #windows: readonly Window[];
  constructor(length: number, windows: readonly Window[]) {
    this.length = length;
    this.#windows = windows;
  }
  static whole(bytes: Uint8Array): Reader {
    return new Reader(bytes.byteLength, [windowOf(0, bytes)]);
  }
  #find(at: number, size: number): Window {
    for (const w of this.#windows) if (at >= w.start && at + size <= w.start + w.bytes.length) return w;
    throw new Error(`ELF reader: bytes ${at}+${size} were not loaded`);
  }
  slice(at: number, size: number): Uint8Array {
    const w = this.#find(at, size);
    return w.bytes.subarray(at - w.start, at - w.start + size);
  }
  u8(at: number): number {
    const w = this.#find(at, 1);
    return w.view.getUint8(at - w.start);
  }
  u16(at: number): number {
    const w = this.#find(at, 2);
    return w.view.getUint16(at - w.start, true);
  }
  u32(at: number): number {
    const w = this.#find(at, 4);
    return w.view.getUint32(at - w.start, true);
  }
  /** A u64 as a number; values beyond 2^53 become Infinity, which every bounds check refuses. */
  u64(at: number): number {
    const w = this.#find(at, 8);
    const value = w.view.getBigUint64(at - w.start, true);
    return value > BigInt(Number.MAX_SAFE_INTEGER) ? Number.POSITIVE_INFINITY : Number(value);
  }
  /** True when [at, at + size) lies inside the file. */
  has(at: number, size: number): boolean {
    return at >= 0 && size >= 0 && at + size <= this.length;
  }
}

interface Note {
  readonly offset: number;
  readonly size: number;
}

/**
 * Reads and validates both notes of a solo5 image. `file` is the name used in messages, as
 * the tender prints its KERNEL argument (`<file>: No Solo5 ABI information found in executable`).
 * Order as solo5.md §2.4: ELF header and program headers, ABI note, manifest note.
 */
export function readSolo5Notes(image: Uint8Array, file = 'KERNEL'): Result<Solo5Notes, ElfError> {
  return readNotes(Reader.whole(image), file);
}

/**
 * `readSolo5Notes` of an image file, reading only what the checks look at (the header, the
 * program headers, the start of each note segment), never the whole image.
 */
export async function readSolo5NotesFromFile(
  path: string,
  file = 'KERNEL',
): Promise<Result<Solo5Notes, ElfError | PetrelError<'E_HOST_IO'>>> {
  let handle: FileHandle;
  try {
    handle = await open(path, constants.O_RDONLY);
  } catch (cause) {
    return err('E_HOST_IO', `open ${path} failed: ${(cause as Error).message}`, { path });
  }
  try {
    const length = (await handle.stat()).size;
    const windows: Window[] = [];
    const load = async (start: number, size: number): Promise<Window | null> => {
      if (!Number.isFinite(start) || start >= length) return null;
      const bytes = new Uint8Array(Math.min(size, length - start));
      const { bytesRead } = await handle.read(bytes, 0, bytes.length, start);
      const w = windowOf(start, bytes.subarray(0, bytesRead));
      windows.push(w);
      return w;
    };
    const header = await load(0, EHDR_SIZE);
    if (header !== null && header.bytes.length === EHDR_SIZE) {
      const r = new Reader(length, [header]);
      const phoff = r.u64(32);
      const table = await load(phoff, r.u16(56) * PHDR_SIZE);
      for (let at = 0; table !== null && at + PHDR_SIZE <= table.bytes.length; at += PHDR_SIZE) {
        if (table.view.getUint32(at, true) !== PT_NOTE) continue;
        const offset = table.view.getBigUint64(at + 8, true);
        if (offset < BigInt(length)) await load(Number(offset), NOTE_HEADER + MANIFEST_MAX);
      }
    }
    return readNotes(new Reader(length, windows), file);
  } catch (cause) {
    return err('E_HOST_IO', `reading ${path} failed: ${(cause as Error).message}`, { path });
  } finally {
    await handle.close();
  }
}

function readNotes(r: Reader, file: string): Result<Solo5Notes, ElfError> {
  const fail = (code: ElfErrorCode, text: string, details?: Record<string, unknown>): Fail =>
    err(code, `${file}: ${text}`, details);
  const invalid = (text: string): Fail => fail('E_ELF_INVALID', `invalid executable: ${text}`);

  if (r.length < EHDR_SIZE)
    return invalid(`elf header does not match the expected size (${r.length} != ${EHDR_SIZE})`);
  const headerOk =
    r.u32(0) === 0x464c457f &&
    r.u8(4) === 2 && // ELFCLASS64
    r.u8(5) === 1 && // little-endian
    r.u32(20) === 1 && // e_version
    r.u16(16) === ET_EXEC &&
    r.u16(18) === EM_X86_64 &&
    r.u16(52) === EHDR_SIZE &&
    r.u16(54) === PHDR_SIZE &&
    r.u16(56) >= 1;
  if (!headerOk) return invalid('invalid or unsupported executable (elf header invalid while loading note)');
  const phoff = r.u64(32);
  const phnum = r.u16(56);
  const tableSize = phnum * PHDR_SIZE;
  if (!r.has(phoff, tableSize)) {
    const got = Number.isFinite(phoff) ? Math.max(0, Math.min(tableSize, r.length - phoff)) : 0;
    return invalid(
      `program header does not match the expected size (${got} != ${tableSize} while loading note)`,
    );
  }

  // solo5 looks only at the first note of each PT_NOTE segment; the content starts after the
  // 20-byte header, padded to the note's alignment (4 for the ABI note, 8 for the manifest).
  const findNote = (type: number, max: number, padding: number): Result<Note | null, ElfError> => {
    for (let i = 0; i < phnum; i++) {
      const ph = phoff + i * PHDR_SIZE;
      if (r.u32(ph) !== PT_NOTE) continue;
      const offset = r.u64(ph + 8);
      const filesz = r.u64(ph + 32);
      if (filesz < 12)
        return invalid(`phdr[${i}].p_filesz note does not fall within valid size (${filesz} < 12)`);
      if (filesz < 20) continue;
      if (!r.has(offset, 20)) return invalid(`phdr[${i}] note does not fall within the file`);
      const namesz = r.u32(offset);
      const descsz = r.u32(offset + 4);
      const noteType = r.u32(offset + 8);
      const named = namesz === 6 && [...'Solo5\0'].every((c, k) => r.u8(offset + 12 + k) === c.charCodeAt(0));
      if (!named || noteType !== type) continue;
      if (descsz < 1 || descsz > max) {
        return invalid(
          `phdr[${i}] note does not fall within valid size (${descsz} < 1 || ${descsz} > ${max})`,
        );
      }
      if (filesz < 20 + descsz)
        return invalid(`phdr[${i}] note does not fall within valid size (${filesz} < 20+${descsz})`);
      if (descsz < padding) {
        // solo5 computes descsz - padding in an unsigned 64-bit size and prints it (a solo5 bug).
        const wrapped = (2n ** 64n + BigInt(descsz - padding)).toString();
        return fail(
          'E_ELF_INVALID',
          `INV_EXE: phdr[${i}] note does not fall within valid size (${wrapped} <= 0 || ${wrapped} > ${max - padding})`,
        );
      }
      const start = offset + 20 + padding;
      const size = descsz - padding;
      if (!r.has(start, size)) return invalid(`phdr[${i}] note does not fall within the file`);
      return ok({ offset: start, size });
    }
    return ok(null);
  };

  const abiNote = findNote(ABI_NOTE_TYPE, ABI_MAX, 0);
  if (!abiNote.ok) return abiNote;
  if (abiNote.value === null) return fail('E_ELF_NO_ABI', 'No Solo5 ABI information found in executable');
  const abi = readAbi(r, abiNote.value, fail);
  if (!abi.ok) return abi;

  const manifestNote = findNote(MANIFEST_NOTE_TYPE, MANIFEST_MAX, 4);
  if (!manifestNote.ok) return manifestNote;
  if (manifestNote.value === null) return fail('E_ELF_NO_MANIFEST', 'No Solo5 manifest found in executable');
  const devices = readManifest(r, manifestNote.value, fail);
  if (!devices.ok) return devices;
  return ok({ abi: abi.value, devices: devices.value });
}

type Failer = (code: ElfErrorCode, text: string, details?: Record<string, unknown>) => Fail;

/** ABI descriptor: exactly 16 bytes with zero reserved words (Albatross, semantics §10.2). */
function readAbi(r: Reader, note: Note, fail: Failer): Result<AbiNote, ElfError> {
  if (note.size !== 16) return fail('E_ELF_ABI_INVALID', 'abi manifest size mismatch', { size: note.size });
  const target = r.u32(note.offset);
  const version = r.u32(note.offset + 4);
  if (r.u32(note.offset + 8) !== 0) return fail('E_ELF_ABI_INVALID', 'non-zero reserved0');
  if (r.u32(note.offset + 12) !== 0) return fail('E_ELF_ABI_INVALID', 'non-zero reserved1');
  if (TARGET_NAMES[target] === undefined)
    return fail('E_ELF_ABI_INVALID', `unknown abi target: ${target}`, { target });
  return ok({ target, version });
}

/**
 * Manifest content: solo5's validation (solo5.md §2.3) in its order, then Albatross' stricter
 * ones (zero properties, known types). Every failure is solo5's `Solo5 manifest is invalid`;
 * `details.reason` says which rule, in Albatross' words.
 */
function readManifest(r: Reader, note: Note, fail: Failer): Result<readonly ManifestDevice[], ElfError> {
  const bad = (reason: string): Fail =>
    fail('E_ELF_MANIFEST_INVALID', 'Solo5 manifest is invalid', { reason });
  const at = note.offset;
  if (note.size < 8) return bad('unexpected note size');
  if (r.u32(at) !== 1) return bad('unsupported manifest version');
  const entries = r.u32(at + 4);
  if (entries > MANIFEST_MAX_ENTRIES) return bad('too many manifest entries');
  if (note.size !== 8 + MANIFEST_ENTRY_SIZE * entries) return bad('unexpected note size');
  if (entries < 1) return bad('zero manifest entries');
  if (r.u32(at + 8 + NAME_SIZE) !== MFT_RESERVED_FIRST || r.u8(at + 8) !== 0)
    return bad('expected RESERVED_FIRST');
  const devices: ManifestDevice[] = [];
  for (let i = 0; i < entries; i++) {
    const entry = at + 8 + i * MANIFEST_ENTRY_SIZE;
    if (r.u8(entry + NAME_SIZE - 1) !== 0) return bad('unterminated device name');
    const type = r.u32(entry + NAME_SIZE);
    let nameLength = 0;
    while (r.u8(entry + nameLength) !== 0) nameLength++;
    if (r.u8(entry + 96) !== 0) return bad('non-zero mft_entry.attached');
    for (let k = 72; k < 88; k++) if (r.u8(entry + k) !== 0) return bad('non-zero mft_entry.u');
    for (let k = 88; k < 96; k++) if (r.u8(entry + k) !== 0) return bad('non-zero mft_entry.b');
    if (i === 0) continue;
    if (type !== MFT_BLOCK_BASIC && type !== MFT_NET_BASIC)
      return bad(`unknown manifest entry type: ${type}`);
    const name = Buffer.from(r.slice(entry, nameLength)).toString('latin1');
    devices.push({ name, type: type === MFT_BLOCK_BASIC ? 'BLOCK_BASIC' : 'NET_BASIC' });
  }
  return ok(devices);
}

export type { TenderKind };

/** The tender an ABI note asks for; other targets are Albatross' `unsupported solo5 target %s`. */
export function tenderKindOf(abi: AbiNote): Result<TenderKind, PetrelError<'E_SOLO5_TARGET'>> {
  const name = TARGET_NAMES[abi.target] ?? String(abi.target);
  if (name === 'hvt' || name === 'spt') return ok(name);
  return err('E_SOLO5_TARGET', `unsupported solo5 target ${name}`, { target: abi.target });
}
