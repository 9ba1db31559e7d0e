import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  readSolo5Notes as readInMemory,
  readSolo5NotesFromFile,
  tenderKindOf,
} from '../../src/tender/elf.js';
import {
  ABI1,
  abiDesc,
  BLOCK_BASIC,
  buildElf,
  MFT1,
  manifestDesc,
  NET_BASIC,
  PT_LOAD,
  RESERVED_FIRST,
  solo5Image,
} from './elf-builder.js';

// Every image read here is read again from a file afterwards: the file reader, which loads
// only the pieces the checks look at, must give the same answer, errors included.
const seen: [Uint8Array, string | undefined][] = [];
const readSolo5Notes = (image: Uint8Array, file?: string) => {
  seen.push([image, file]);
  return readInMemory(image, file);
};
afterEach(async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'petrel-elf-'));
  try {
    for (const [image, file] of seen.splice(0)) {
      const at = path.join(dir, 'image');
      await writeFile(at, image);
      expect(await readSolo5NotesFromFile(at, file)).toEqual(readInMemory(image, file));
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

const abiSeg = { notes: [{ type: ABI1, desc: abiDesc(1, 2) }] };
const mftSeg = (desc = manifestDesc([])) => ({ notes: [{ type: MFT1, desc }] });

function failure(image: Uint8Array) {
  const result = readSolo5Notes(image, 'k.hvt');
  if (result.ok) throw new Error('expected a failure');
  return result.error;
}

describe('reading solo5 notes', () => {
  it('reads the ABI note and the manifest devices in manifest order', () => {
    const image = solo5Image(1, 2, [
      { name: 'service', type: NET_BASIC },
      { name: 'storage', type: BLOCK_BASIC },
    ]);
    expect(readSolo5Notes(image)).toEqual({
      ok: true,
      value: {
        abi: { target: 1, version: 2 },
        devices: [
          { name: 'service', type: 'NET_BASIC' },
          { name: 'storage', type: 'BLOCK_BASIC' },
        ],
      },
    });
  });

  it('reads a manifest with 63 devices (the maximum)', () => {
    const devices = Array.from({ length: 63 }, (_, i) => ({ name: `d${i}`, type: BLOCK_BASIC }));
    const result = readSolo5Notes(solo5Image(2, 2, devices));
    expect(result.ok && result.value.devices.length).toBe(63);
  });

  describe('ELF header and program headers, with solo5 texts', () => {
    it('refuses a short file', () => {
      expect(failure(Buffer.alloc(10)).message).toBe(
        'k.hvt: invalid executable: elf header does not match the expected size (10 != 64)',
      );
    });
    const unsupported =
      'k.hvt: invalid executable: invalid or unsupported executable (elf header invalid while loading note)';
    it.each([
      ['ELF32', { elfClass: 1 }],
      ['big-endian', { data: 2 }],
      ['a PIE (ET_DYN)', { type: 3 }],
      ['aarch64', { machine: 183 }],
      ['e_version 0', { version: 0 }],
      ['a program header size of 32', { phentsize: 32 }],
      ['no program headers', { phnum: 0 }],
    ])('refuses %s', (_what, header) => {
      expect(failure(buildElf([abiSeg, mftSeg()], header)).message).toBe(unsupported);
    });
    it('refuses a file that is not ELF', () => {
      const image = Buffer.from(solo5Image(1, 2, []));
      image.write('\x7fELG', 0, 'latin1');
      expect(failure(image).message).toBe(unsupported);
    });
    it('refuses a truncated program header table', () => {
      const image = buildElf([abiSeg, mftSeg()], { phnum: 40 });
      expect(failure(image).message).toBe(
        `k.hvt: invalid executable: program header does not match the expected size (${image.length - 64} != 2240 while loading note)`,
      );
    });
    it('refuses a PT_NOTE smaller than a note header', () => {
      expect(failure(buildElf([{ notes: [], filesz: 11 }, abiSeg, mftSeg()])).message).toBe(
        'k.hvt: invalid executable: phdr[0].p_filesz note does not fall within valid size (11 < 12)',
      );
    });
    it('refuses an ABI note whose size is 0 or above 32', () => {
      const zero = buildElf([{ notes: [{ type: ABI1, desc: abiDesc(1, 2), descsz: 0 }] }, mftSeg()]);
      expect(failure(zero).message).toBe(
        'k.hvt: invalid executable: phdr[0] note does not fall within valid size (0 < 1 || 0 > 32)',
      );
      const big = buildElf([{ notes: [{ type: ABI1, desc: Buffer.alloc(40) }] }, mftSeg()]);
      expect(failure(big).message).toBe(
        'k.hvt: invalid executable: phdr[0] note does not fall within valid size (40 < 1 || 40 > 32)',
      );
    });
    it('refuses a note longer than its segment', () => {
      const image = buildElf([{ notes: [{ type: ABI1, desc: abiDesc(1, 2) }], filesz: 30 }, mftSeg()]);
      expect(failure(image).message).toBe(
        'k.hvt: invalid executable: phdr[0] note does not fall within valid size (30 < 20+16)',
      );
    });
    it('prints solo5 odd INV_EXE text for a manifest note smaller than its padding', () => {
      const image = buildElf([abiSeg, { notes: [{ type: MFT1, desc: Buffer.alloc(4), descsz: 1 }] }]);
      expect(failure(image).message).toMatch(
        /^k\.hvt: INV_EXE: phdr\[1\] note does not fall within valid size \(18446744073709551613 <= 0/,
      );
    });
    it('refuses a note segment that points past the end of the file', () => {
      const image = buildElf([{ ...abiSeg, offset: 1_000_000 }, mftSeg()]);
      expect(failure(image).code).toBe('E_ELF_INVALID');
    });
  });

  describe('the ABI note', () => {
    it('is absent when no PT_NOTE carries it', () => {
      const error = failure(buildElf([{ type: PT_LOAD, notes: [] }, mftSeg()]));
      expect(error.message).toBe('k.hvt: No Solo5 ABI information found in executable');
      expect(error.code).toBe('E_ELF_NO_ABI');
    });
    it('is invisible when it is not the first note of its segment (as in solo5)', () => {
      const openbsd = { type: 1, owner: 'OpenBSD\0', desc: Buffer.alloc(4) };
      const image = buildElf([{ notes: [openbsd, { type: ABI1, desc: abiDesc(1, 2) }] }, mftSeg()]);
      expect(failure(image).message).toBe('k.hvt: No Solo5 ABI information found in executable');
    });
    it('does not count with another owner', () => {
      const image = buildElf([{ notes: [{ type: ABI1, owner: 'Solo6\0', desc: abiDesc(1, 2) }] }, mftSeg()]);
      expect(failure(image).code).toBe('E_ELF_NO_ABI');
    });
    it.each([
      ['a 12-byte descriptor', abiDesc(1, 2).subarray(0, 12), 'abi manifest size mismatch'],
      ['reserved0 set', abiDesc(1, 2, 7), 'non-zero reserved0'],
      ['reserved1 set', abiDesc(1, 2, 0, 7), 'non-zero reserved1'],
      ['target 9', abiDesc(9, 2), 'unknown abi target: 9'],
    ])('refuses %s', (_what, desc, text) => {
      const error = failure(buildElf([{ notes: [{ type: ABI1, desc }] }, mftSeg()]));
      expect(error.message).toBe(`k.hvt: ${text}`);
    });
  });

  describe('the manifest', () => {
    it('is absent without a manifest note', () => {
      expect(failure(buildElf([abiSeg])).message).toBe('k.hvt: No Solo5 manifest found in executable');
    });
    const longName = Buffer.alloc(68, 0x61);
    it.each([
      ['version 2', manifestDesc([], { version: 2 }), 'unsupported manifest version'],
      ['65 entries', manifestDesc([], { count: 65 }), 'too many manifest entries'],
      ['a count that does not match the size', manifestDesc([], { count: 2 }), 'unexpected note size'],
      ['zero entries', manifestDesc([], { raw: true, count: 0 }), 'zero manifest entries'],
      [
        'entry 0 of type BLOCK_BASIC',
        manifestDesc([{ name: '', type: BLOCK_BASIC }], { raw: true }),
        'expected RESERVED_FIRST',
      ],
      [
        'a name on entry 0',
        manifestDesc([{ name: 'x', type: RESERVED_FIRST }], { raw: true }),
        'expected RESERVED_FIRST',
      ],
      [
        'an unterminated name',
        manifestDesc([{ name: longName, type: NET_BASIC }]),
        'unterminated device name',
      ],
      [
        'an attached device',
        manifestDesc([{ name: 'a', type: NET_BASIC, attached: 1 }]),
        'non-zero mft_entry.attached',
      ],
      [
        'device properties set',
        manifestDesc([{ name: 'a', type: NET_BASIC, poke: 75 }]),
        'non-zero mft_entry.u',
      ],
      [
        'host-private bytes set',
        manifestDesc([{ name: 'a', type: NET_BASIC, poke: 90 }]),
        'non-zero mft_entry.b',
      ],
      ['an unknown type', manifestDesc([{ name: 'a', type: 7 }]), 'unknown manifest entry type: 7'],
      [
        'RESERVED_FIRST later',
        manifestDesc([{ name: 'a', type: RESERVED_FIRST }]),
        'unknown manifest entry type: 1073741824',
      ],
    ])('refuses %s', (_what, desc, reason) => {
      const error = failure(buildElf([abiSeg, mftSeg(desc)]));
      expect(error.message).toBe('k.hvt: Solo5 manifest is invalid');
      expect(error.code).toBe('E_ELF_MANIFEST_INVALID');
      expect(error.details?.reason).toBe(reason);
    });
  });

  it('selects the tender from the target; other targets are refused with Albatross text', () => {
    expect(tenderKindOf({ target: 1, version: 2 })).toEqual({ ok: true, value: 'hvt' });
    expect(tenderKindOf({ target: 2, version: 2 })).toEqual({ ok: true, value: 'spt' });
    const virtio = tenderKindOf({ target: 3, version: 1 });
    expect(!virtio.ok && virtio.error.message).toBe('unsupported solo5 target virtio');
  });
});
