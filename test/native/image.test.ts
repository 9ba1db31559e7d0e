// Which images petrel-hvt accepts, with solo5-hvt's rules and texts: the ELF header and the
// Solo5 notes (solo5.md §2.1-§2.4, checked before KVM) and the segments (§3.6, checked after).
// Each case patches a copy of a built canary.
import { readFileSync, writeFileSync } from 'node:fs';
import { describe, it } from 'vitest';
import { type Elf, NOTE_ABI, NOTE_MANIFEST, PT_LOAD, solo5Note } from './elf.js';
import {
  canary,
  canaryBlk,
  expectFailure,
  expectLateFailure,
  expectReachedKvm,
  requireBuilt,
  runTender,
} from './native.js';
import { scratchDir } from './scratch.js';

const scratch = scratchDir('petrel-hvt-image-', requireBuilt);

/** A patched copy of a built image. */
const patched = (from: string, edit: (b: Buffer, elf: Elf) => void): string =>
  scratch.patched(from, edit, 'hvt');

const abi = (elf: Elf) => solo5Note(elf, NOTE_ABI);
const mft = (elf: Elf) => solo5Note(elf, NOTE_MANIFEST);
/** File offset of manifest entry i (the content starts 24 bytes into the note). */
const entry = (elf: Elf, i: number) => mft(elf).at + 32 + 104 * i;

describe('the ELF header (§2.1)', () => {
  it('a missing file: "KERNEL: Could not open: <errno text>"', () => {
    const path = scratch.path('nothing-here.hvt');
    expectFailure(runTender([path]), `${path}: Could not open: No such file or directory`);
  });

  it('an empty or short file: the header size it read', () => {
    const empty = scratch.path('empty.hvt');
    writeFileSync(empty, '');
    expectFailure(
      runTender([empty]),
      `${empty}: invalid executable: elf header does not match the expected size (0 != 64)`,
    );
    const short = scratch.path('short.hvt');
    writeFileSync(short, readFileSync(canary).subarray(0, 10));
    expectFailure(
      runTender([short]),
      `${short}: invalid executable: elf header does not match the expected size (10 != 64)`,
    );
  });

  it('anything but a static x86_64 ELF64 executable is refused with one text', () => {
    const text = scratch.path('text.hvt');
    writeFileSync(text, 'x'.repeat(200));
    const cases = [
      text,
      patched(canary, (b) => b.writeUInt8(1, 4)), // ELFCLASS32
      patched(canary, (b) => b.writeUInt8(2, 5)), // big-endian
      patched(canary, (b) => b.writeUInt32LE(0, 20)), // e_version
      patched(canary, (b) => b.writeUInt16LE(3, 16)), // ET_DYN: a PIE
      patched(canary, (b) => b.writeUInt16LE(3, 18)), // EM_386
      patched(canary, (b) => b.writeUInt16LE(52, 52)), // e_ehsize
      patched(canary, (b) => b.writeUInt16LE(32, 54)), // e_phentsize
      patched(canary, (b) => b.writeUInt16LE(0, 56)), // e_phnum
    ];
    for (const path of cases) {
      expectFailure(
        runTender([path]),
        `${path}: invalid executable: invalid or unsupported executable (elf header invalid while loading note)`,
      );
    }
  });

  it('the OS/ABI byte is not looked at', () => {
    expectReachedKvm(runTender(['--mem=2', patched(canary, (b) => b.writeUInt8(9, 7)), 'exit', '0']), 0);
  });

  it('program headers beyond the end of the file', () => {
    const path = patched(canary, (b) => b.writeBigUInt64LE(BigInt(b.length), 32));
    expectFailure(
      runTender([path]),
      `${path}: invalid executable: program header does not match the expected size (0 != 280 while loading note)`,
    );
  });
});

describe('the ABI note (§2.1, §2.2)', () => {
  const cases: [string, (b: Buffer, e: Elf) => void, string][] = [
    [
      'another note type',
      (b, e) => b.writeUInt32LE(0x12345678, abi(e).at + 8),
      'No Solo5 ABI information found in executable',
    ],
    [
      'another owner',
      (b, e) => b.write('Solo6', abi(e).at + 12, 'latin1'),
      'No Solo5 ABI information found in executable',
    ],
    [
      'a segment too small to hold a note header',
      (b, e) => b.writeBigUInt64LE(16n, (e.phdrs[abi(e).phdr]?.at ?? 0) + 32),
      'No Solo5 ABI information found in executable',
    ],
    [
      'the spt target',
      (b, e) => b.writeUInt32LE(2, abi(e).at + 20),
      'Executable is not for the solo5-hvt target',
    ],
    [
      'the virtio target',
      (b, e) => b.writeUInt32LE(3, abi(e).at + 20),
      'Executable is not for the solo5-hvt target',
    ],
    [
      'ABI version 3',
      (b, e) => b.writeUInt32LE(3, abi(e).at + 24),
      'Executable requests unsupported ABI version 3',
    ],
    [
      'ABI version 1',
      (b, e) => b.writeUInt32LE(1, abi(e).at + 24),
      'Executable requests unsupported ABI version 1',
    ],
    [
      'descsz 0',
      (b, e) => b.writeUInt32LE(0, abi(e).at + 4),
      'invalid executable: phdr[3] note does not fall within valid size (0 < 1 || 0 > 32)',
    ],
    [
      'descsz 33',
      (b, e) => b.writeUInt32LE(33, abi(e).at + 4),
      'invalid executable: phdr[3] note does not fall within valid size (33 < 1 || 33 > 32)',
    ],
    [
      'a segment shorter than the note',
      (b, e) => b.writeBigUInt64LE(30n, (e.phdrs[abi(e).phdr]?.at ?? 0) + 32),
      'invalid executable: phdr[3] note does not fall within valid size (30 < 20+16)',
    ],
    [
      'a segment shorter than a note header',
      (b, e) => b.writeBigUInt64LE(8n, (e.phdrs[abi(e).phdr]?.at ?? 0) + 32),
      'invalid executable: phdr[3].p_filesz note does not fall within valid size (8 < 12)',
    ],
  ];
  it.each(cases)('%s', (_, edit, message) => {
    const path = patched(canary, edit);
    expectFailure(runTender([path]), `${path}: ${message}`);
  });

  it('the reserved words are not looked at', () => {
    const path = patched(canary, (b, e) => b.writeUInt32LE(7, abi(e).at + 28));
    expectReachedKvm(runTender(['--mem=2', path, 'exit', '0']), 0);
  });

  it('is checked before the manifest', () => {
    const path = patched(canary, (b, e) => {
      b.writeUInt32LE(3, abi(e).at + 24);
      b.writeUInt8(1, entry(e, 0) + 96);
    });
    expectFailure(runTender([path]), `${path}: Executable requests unsupported ABI version 3`);
  });
});

describe('the manifest (§2.3)', () => {
  const invalid: [string, string, (b: Buffer, e: Elf) => void][] = [
    ['attached set on entry 0', canary, (b, e) => b.writeUInt8(1, entry(e, 0) + 96)],
    ['attached set on a device', canaryBlk, (b, e) => b.writeUInt8(1, entry(e, 1) + 96)],
    ['version 2', canary, (b, e) => b.writeUInt32LE(2, mft(e).at + 24)],
    ['0 entries', canary, (b, e) => b.writeUInt32LE(0, mft(e).at + 28)],
    ['2 entries in a note sized for 1', canary, (b, e) => b.writeUInt32LE(2, mft(e).at + 28)],
    ['65 entries', canaryBlk, (b, e) => b.writeUInt32LE(65, mft(e).at + 28)],
    ['entry 0 of type BLOCK_BASIC', canary, (b, e) => b.writeUInt32LE(1, entry(e, 0) + 68)],
    ['entry 0 with a name', canary, (b, e) => b.write('x', entry(e, 0), 'latin1')],
    ['an unterminated name', canaryBlk, (b, e) => b.fill('x'.charCodeAt(0), entry(e, 1), entry(e, 1) + 68)],
  ];
  it.each(invalid)('%s: "Solo5 manifest is invalid"', (_, from, edit) => {
    const path = patched(from, edit);
    expectFailure(runTender([path]), `${path}: Solo5 manifest is invalid`);
  });

  it('no manifest note: "No Solo5 manifest found in executable"', () => {
    const path = patched(canary, (b, e) => b.writeUInt32LE(0x12345678, mft(e).at + 8));
    expectFailure(runTender([path]), `${path}: No Solo5 manifest found in executable`);
  });

  it('property bytes, the host-private word and types of later entries are not looked at', () => {
    const path = patched(canaryBlk, (b, e) => {
      b.fill(0xaa, entry(e, 0) + 72, entry(e, 0) + 96);
      b.writeUInt32LE(7, entry(e, 1) + 68);
    });
    expectReachedKvm(runTender(['--mem=2', path, 'exit', '0']), 0);
  });
});

describe('loading the segments (§3.6, after KVM is open)', () => {
  const textPhdr = (e: Elf) => e.phdrs.find((p) => p.type === PT_LOAD && p.flags & 1);

  it('refuses a segment that is both writable and executable', () => {
    const path = patched(canary, (b, e) => b.writeUInt32LE(7, (textPhdr(e)?.at ?? 0) + 4));
    expectLateFailure(
      ['--mem=2', path],
      `${path}: invalid executable: phdr[0] requests WRITE and EXEC permissions`,
    );
  });

  it('refuses an entry point outside guest memory', () => {
    const low = patched(canary, (b) => b.writeBigUInt64LE(0x1000n, 24));
    expectLateFailure(
      ['--mem=2', low],
      `${low}: invalid executable: e_entry does not fall within the memory allocation range (4096 < 1048576 || 4096 >= 2097152)`,
    );
    const high = patched(canary, (b) => b.writeBigUInt64LE(0x200000n, 24));
    expectLateFailure(
      ['--mem=2', high],
      `${high}: invalid executable: e_entry does not fall within the memory allocation range (2097152 < 1048576 || 2097152 >= 2097152)`,
    );
  });

  it('refuses a segment below 1 MiB', () => {
    const path = patched(canary, (b, e) => b.writeBigUInt64LE(0x1000n, (textPhdr(e)?.at ?? 0) + 16));
    expectLateFailure(
      ['--mem=2', path],
      `${path}: invalid executable: phdr[0].p_vaddr outside of valid memory range (4096 < 1048576)`,
    );
  });

  it('refuses a segment whose memory does not fit', () => {
    const path = patched(canary, (b, e) => {
      const data = e.phdrs[2];
      if (data) b.writeBigUInt64LE(0x200000n, data.at + 40);
    });
    expectLateFailure(
      ['--mem=2', path],
      `${path}: invalid executable: phdr[2] program memory segment falls outside of valid range (3158016 (p_vaddr + p_memsz) > 2097152 (mem_size))`,
    );
  });

  it('skips an empty PT_LOAD at address 0, as solo5 images carry one', () => {
    const path = patched(canary, (b, e) => {
      const data = e.phdrs[2];
      if (!data) return;
      for (const off of [16, 24, 32, 40]) b.writeBigUInt64LE(0n, data.at + off);
    });
    expectReachedKvm(runTender(['--mem=2', path, 'exit', '7']), 7);
  });
});
