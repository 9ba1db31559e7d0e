// petrel-spt's command line and image checks (solo5.md §1.1-§1.5, §2): solo5-spt's options,
// usage and texts, the spt target and Petrel's spt ABI version (native/spt/ABI.md), and the
// notes of the spt canary images. The parsing, notes and manifest code is common/ and shared
// with petrel-hvt, whose own tests cover it in depth; these show it speaks as petrel-spt.
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Elf, NOTE_ABI, NOTE_MANIFEST, PF_W, PF_X, PT_LOAD, parseElf, solo5Note } from './elf.js';
import { canary, canaryBlk, canaryNet, runSync } from './native.js';
import {
  expectInvalidOption,
  expectSptFailure,
  requireSptBuilt,
  runSpt,
  SPT_ABI_VERSION,
  spt,
  sptCanary,
  sptCanaryBlk,
  sptCanaryNet,
} from './spt.js';

const usage = (prog: string) =>
  [
    `usage: ${prog} [ CORE OPTIONS ] [ -- ] KERNEL [ ARGS ]`,
    'KERNEL is the filename of the unikernel to run.',
    'ARGS are optional arguments passed to the unikernel.',
    'Core options:',
    '  [ --mem=512 ] (guest memory in MB)',
    '    --help (display this help)',
    'Compiled-in modules: core net block ',
    'Compiled-in module options:',
    '    --x-exec-heap (make the heap executable). WARNING: This option is dangerous and not recommended as it makes the heap and stack executable.',
    '    --net:NAME=IFACE | @NN (attach tap at IFACE or at fd @NN as network NAME)',
    '  [ --net-mac:NAME=HWADDR ] (set HWADDR for network NAME)',
    '    --block:NAME=PATH (attach block device/file at PATH as block storage NAME)',
    '  [ --block-sector-size:NAME=SECTORSIZE ] (set sector size for block device NAME; must be a power of two greater than or equal 512)',
    '',
  ].join('\n');

let dir: string;
let serial = 0;
beforeAll(() => {
  requireSptBuilt();
  dir = mkdtempSync(join(tmpdir(), 'petrel-spt-cli-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A patched copy of a built image. */
function patched(from: string, edit: (b: Buffer, elf: Elf) => void): string {
  const b = readFileSync(from);
  edit(b, parseElf(b));
  const path = join(dir, `image-${serial++}.spt`);
  writeFileSync(path, b);
  return path;
}

describe('pass 1: --version, --help, KERNEL', () => {
  it(`--version: two lines on stderr, the second exactly "ABI version ${SPT_ABI_VERSION}", exit 0`, () => {
    const r = runSpt(['--version']);
    expect(r).toMatchObject({ status: 0, stdout: '' });
    expect(r.stderr).toMatch(
      new RegExp(`^petrel-spt tender, version v\\S+\\nABI version ${SPT_ABI_VERSION}\\n$`),
    );
    // Wherever it stands before KERNEL, even after an invalid option.
    expect(runSpt(['--bogus', '--version', sptCanary]).status).toBe(0);
  });

  it("--help prints solo5-spt's usage on stderr and exits 1; the program is named after argv[0]", () => {
    expect(runSpt(['--help'])).toMatchObject({ status: 1, stdout: '', stderr: usage('petrel-spt') });
    const link = join(dir, 'mytender');
    symlinkSync(spt, link);
    expect(runSync(link, ['--help']).stderr).toBe(usage('mytender'));
  });

  it('without KERNEL: "Missing KERNEL operand", the usage, exit 1', () => {
    const r = runSpt(['--mem=4', '--']);
    expect(r).toMatchObject({
      status: 1,
      stderr: `petrel-spt: Missing KERNEL operand\n${usage('petrel-spt')}`,
    });
  });
});

describe('pass 2: options before KERNEL', () => {
  it('an unknown word: "Invalid option", the usage, exit 1', () => {
    for (const word of ['--bogus', '--mem', '--gdb', '--net:service']) {
      const r = runSpt([word, sptCanary]);
      expect(r.stderr).toBe(`petrel-spt: Invalid option: \`${word}'\n${usage('petrel-spt')}`);
      expect(r.status).toBe(1);
    }
  });

  it('--mem=0 and --mem=abc are malformed; a negative size aborts, as solo5-spt does', () => {
    for (const mem of ['--mem=0', '--mem=abc']) {
      expect(runSpt([mem, sptCanary])).toMatchObject({
        status: 1,
        stderr: 'petrel-spt: Malformed argument to --mem\n',
      });
    }
    const r = runSpt(['--mem=-5', sptCanary]);
    expect(r.signal).toBe('SIGABRT');
    expect(r.stderr).toContain('guest memory size must be positive');
  });

  it('--mem is not rounded and has no fixed maximum: 3 and 5000 MiB run', () => {
    for (const mem of ['3', '5000']) {
      const r = runSpt([`--mem=${mem}`, sptCanary, 'exit', '7']);
      expect(r).toMatchObject({ status: 7, stdout: '', stderr: '' });
    }
  });

  it('--x-exec-heap is a core option: accepted with a warning (hvt refuses it)', () => {
    const r = runSpt(['--x-exec-heap', '--mem=2', sptCanary, 'exit', '0']);
    expect(r.stderr).toBe('petrel-spt: WARNING: The heap and stack will be executable (--x-exec-heap).\n');
    expect(r.status).toBe(0);
  });

  it('words after KERNEL go to the guest, even when they look like options', () => {
    const r = runSpt(['--mem=2', sptCanary, '--mem=8', '--block:x=y']);
    expect(r).toMatchObject({ status: 2, stdout: 'petrel-canary unknown mode --mem=8\n', stderr: '' });
  });

  it('guest arguments: 8191 characters fit, 8192 do not', () => {
    const fits = ['exit', '0', 'x'.repeat(8191 - 'exit 0 '.length)];
    expect(runSpt(['--mem=2', sptCanary, ...fits]).status).toBe(0);
    expectSptFailure(
      runSpt(['--mem=2', sptCanary, ...fits.slice(0, 2), `${fits[2]}x`]),
      'Guest command line too long (max=8191 characters)',
    );
  });
});

describe('the image (solo5.md §2, §3.6)', () => {
  it("a missing file, a non-ELF file and a host executable: solo5's texts, exit 1", () => {
    const missing = join(dir, 'nothing.spt');
    expectSptFailure(runSpt([missing]), `${missing}: Could not open: No such file or directory`);
    const text = join(dir, 'text.spt');
    writeFileSync(text, 'not an executable at all, but long enough to hold an ELF header of 64 bytes\n');
    expectSptFailure(
      runSpt([text]),
      `${text}: invalid executable: invalid or unsupported executable (elf header invalid while loading note)`,
    );
    expectSptFailure(
      runSpt(['/bin/true']),
      '/bin/true: invalid executable: invalid or unsupported executable (elf header invalid while loading note)',
    );
  });

  it('an hvt image: "Executable is not for the solo5-spt target"', () => {
    for (const image of [canary, canaryBlk, canaryNet])
      expectSptFailure(runSpt(['--mem=2', image]), `${image}: Executable is not for the solo5-spt target`);
  });

  it("an spt image of another ABI version (solo5-spt's own 2, or 1002): refused with the version", () => {
    for (const version of [2, 1002]) {
      const image = patched(sptCanary, (b, elf) =>
        b.writeUInt32LE(version, solo5Note(elf, NOTE_ABI).at + 24),
      );
      expectSptFailure(runSpt([image]), `${image}: Executable requests unsupported ABI version ${version}`);
    }
  });

  it('an invalid manifest (an entry already marked attached)', () => {
    const image = patched(sptCanary, (b, elf) => {
      b[solo5Note(elf, NOTE_MANIFEST).at + 32 + 96] = 1;
    });
    expectSptFailure(runSpt([image]), `${image}: Solo5 manifest is invalid`);
  });

  it('a segment both writable and executable is refused', () => {
    const image = patched(sptCanary, (b, elf) => {
      const text = elf.phdrs.find((p) => p.type === PT_LOAD && p.flags & PF_X);
      if (!text) throw new Error('no text segment');
      b.writeUInt32LE(text.flags | PF_W, text.at + 4);
    });
    const text = parseElf(readFileSync(image)).phdrs.find((p) => p.type === PT_LOAD && p.flags & PF_X);
    expectSptFailure(
      runSpt(['--mem=2', image]),
      `${image}: invalid executable: phdr[${text?.index}] requests WRITE and EXEC permissions`,
    );
  });

  it('an entry point beyond --mem', () => {
    const r = runSpt(['--mem=1', sptCanary]);
    expectSptFailure(
      r,
      `${sptCanary}: invalid executable: e_entry does not fall within the memory allocation range (1048576 < 1048576 || 1048576 >= 1048576)`,
    );
  });
});

describe('the manifest against the command line (solo5.md §1.4)', () => {
  it('a device the manifest does not declare, or declares with the other type', () => {
    const disk = join(dir, 'disk.img');
    writeFileSync(disk, Buffer.alloc(4096));
    const word = `--block:storage=${disk}`;
    expectInvalidOption(runSpt([word, sptCanary]), word, "Resource not declared in manifest: 'storage'");
    expectInvalidOption(
      runSpt(['--net:storage=tap0', sptCanaryBlk]),
      '--net:storage=tap0',
      "Resource not declared in manifest: 'storage'",
    );
  });

  it('every declared device must be attached', () => {
    for (const [image, name, type] of [
      [sptCanaryBlk, 'storage', 'BLOCK_BASIC'],
      [sptCanaryNet, 'service', 'NET_BASIC'],
    ] as const) {
      const r = runSpt(['--mem=2', image, 'exit', '0']);
      expect(r.stderr).toBe(
        `petrel-spt: Device '${name}' of type ${type} declared but not attached.\n` +
          'petrel-spt: All declared devices must be attached. See --help for syntax.\n',
      );
      expect(r.status).toBe(1);
    }
  });

  it("block file errors and size checks have solo5's texts", () => {
    const missing = join(dir, 'missing.img');
    expectSptFailure(
      runSpt([`--block:storage=${missing}`, sptCanaryBlk]),
      `Could not open block device: ${missing}: No such file or directory`,
    );
    const odd = join(dir, 'odd.img');
    writeFileSync(odd, Buffer.alloc(1000));
    expectSptFailure(
      runSpt([`--block:storage=${odd}`, '--mem=2', sptCanaryBlk]),
      'storage: Backing storage size must be block aligned (512 bytes)',
    );
    const word = '--block-sector-size:storage=1000';
    expectInvalidOption(
      runSpt([word, sptCanaryBlk]),
      word,
      'Block size must be a multiple of 2 greater than or equal 512',
    );
  });
});

describe('the spt canary images', () => {
  it(`carry the ABI note target spt (2), version ${SPT_ABI_VERSION}, reserved words 0, first in its own PT_NOTE`, () => {
    for (const image of [sptCanary, sptCanaryBlk, sptCanaryNet]) {
      const elf = parseElf(readFileSync(image));
      const abi = solo5Note(elf, NOTE_ABI);
      expect(abi.bytes.subarray(0, 12)).toEqual(
        Buffer.from([6, 0, 0, 0, 16, 0, 0, 0, 0x41, 0x42, 0x49, 0x31]),
      );
      expect([20, 24, 28, 32].map((o) => abi.bytes.readUInt32LE(o))).toEqual([2, SPT_ABI_VERSION, 0, 0]);
      expect(elf.sections.find((s) => s.name === '.note.solo5.abi')?.offset).toBe(abi.at);
    }
  });

  it('carry the same manifests as the hvt images, and no segment both writable and executable', () => {
    const pairs: [string, string][] = [
      [sptCanary, canary],
      [sptCanaryBlk, canaryBlk],
      [sptCanaryNet, canaryNet],
    ];
    for (const [s, h] of pairs) {
      const elf = parseElf(readFileSync(s));
      expect(solo5Note(elf, NOTE_MANIFEST).bytes).toEqual(
        solo5Note(parseElf(readFileSync(h)), NOTE_MANIFEST).bytes,
      );
      for (const p of elf.phdrs.filter((x) => x.type === PT_LOAD))
        expect(p.flags & (PF_W | PF_X)).not.toBe(PF_W | PF_X);
      expect(elf.type).toBe(2); // ET_EXEC
    }
  });
});

describe('guest memory at its fixed address (ABI.md)', () => {
  it('more than the user address space: "Error allocating guest memory", exit 1', () => {
    // 190 TiB: above the 128 TiB of x86_64 user space, wherever the tender itself was loaded.
    expectSptFailure(
      runSpt(['--mem=200000000', sptCanary]),
      'Error allocating guest memory: Cannot allocate memory',
    );
  });
});
