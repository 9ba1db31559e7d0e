// petrel-spt's command line and image checks (solo5-spt.md §1, §5; solo5.md §1-§2): solo5-spt's
// options, usage and texts, the spt target and ABI version 2, and the layout and notes of the spt
// canary images. The parsing, notes and manifest code is common/ and shared with petrel-hvt,
// whose own tests cover it in depth; these show it speaks as solo5-spt, and with SOLO5_SPT set
// each failure is also produced by the real solo5-spt and compared (runBoth).
import { readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  type Elf,
  NOTE_ABI,
  NOTE_MANIFEST,
  PF_W,
  PF_X,
  PT_LOAD,
  parseElf,
  SOLO5_SPT_SHAPE,
  solo5Note,
  sptShape,
} from './elf.js';
import { canary, canaryBlk, canaryNet, runSync } from './native.js';
import { scratchDir } from './scratch.js';
import {
  expectInvalidOption,
  expectSptFailure,
  requireSptBuilt,
  runBoth,
  runSpt,
  SPT_ABI_VERSION,
  solo5Spt,
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

const scratch = scratchDir('petrel-spt-cli-', requireSptBuilt);

/** A patched copy of a built image. */
const patched = (from: string, edit: (b: Buffer, elf: Elf) => void): string =>
  scratch.patched(from, edit, 'spt');

describe('pass 1: --version, --help, KERNEL', () => {
  it(`--version: two lines on stderr, the second exactly "ABI version ${SPT_ABI_VERSION}", exit 0`, () => {
    const r = runSpt(['--version']);
    expect(r).toMatchObject({ status: 0, stdout: '' });
    expect(r.stderr).toMatch(
      new RegExp(`^petrel-spt tender, version v\\S+\\nABI version ${SPT_ABI_VERSION}\\n$`),
    );
    // Wherever it stands before KERNEL, even after an invalid option.
    expect(runSpt(['--bogus', '--version', sptCanary]).status).toBe(0);
    if (solo5Spt !== null)
      expect(runSync(solo5Spt, ['--version']).stderr.split('\n')[1]).toBe('ABI version 2');
  });

  it("--help prints solo5-spt's usage on stderr and exits 1; the program is named after argv[0]", () => {
    expect(runBoth(['--help'], { sameStderr: true })).toMatchObject({
      status: 1,
      stdout: '',
      stderr: usage('petrel-spt'),
    });
    const link = scratch.path('mytender');
    symlinkSync(spt, link);
    expect(runSync(link, ['--help']).stderr).toBe(usage('mytender'));
  });

  it('without KERNEL: "Missing KERNEL operand", the usage, exit 1', () => {
    const r = runBoth(['--mem=4', '--'], { sameStderr: true });
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
      expect(runBoth([mem, sptCanary], { sameStderr: true })).toMatchObject({
        status: 1,
        stderr: 'petrel-spt: Malformed argument to --mem\n',
      });
    }
    // -5 MiB wraps to a size beyond the tender's own memory: solo5-spt's assertion, SIGABRT (134).
    const r = runBoth(['--mem=-5', sptCanary]);
    expect(r.signal).toBe('SIGABRT');
    expect(r.stderr).toMatch(
      /^petrel-spt: Assertion failed: guest memory .* must end below the tender's own mappings/u,
    );
  });

  it('--mem is not rounded and has no fixed maximum: 3 and 5000 MiB run', () => {
    for (const mem of ['3', '5000']) {
      const r = runBoth([`--mem=${mem}`, sptCanary, 'exit', '7'], { sameStderr: true });
      expect(r).toMatchObject({ status: 7, stdout: '', stderr: '' });
    }
  });

  it('--x-exec-heap (any word it begins) is a core option: accepted with a warning (hvt refuses it)', () => {
    for (const word of ['--x-exec-heap', '--x-exec-heap-please']) {
      const r = runBoth([word, '--mem=2', sptCanary, 'exit', '0'], { sameStderr: true });
      expect(r.stderr).toBe(
        'petrel-spt: WARNING: The use of --x-exec-heap is dangerous and not recommended as it makes the heap and stack executable.\n',
      );
      expect(r.status).toBe(0);
    }
  });

  it('words after KERNEL go to the guest, even when they look like options', () => {
    const r = runBoth(['--mem=2', sptCanary, '--mem=8', '--block:x=y'], { sameStderr: true });
    expect(r).toMatchObject({ status: 2, stdout: 'petrel-canary unknown mode --mem=8\n', stderr: '' });
  });

  it('guest arguments: 8191 characters fit, 8192 do not', () => {
    const fits = ['exit', '0', 'x'.repeat(8191 - 'exit 0 '.length)];
    expect(runBoth(['--mem=2', sptCanary, ...fits]).status).toBe(0);
    expectSptFailure(
      runBoth(['--mem=2', sptCanary, ...fits.slice(0, 2), `${fits[2]}x`], { sameStderr: true }),
      'Guest command line too long (max=8191 characters)',
    );
  });
});

describe('the image (solo5-spt.md §1.2, §1.3, §5.3)', () => {
  it("a missing file, a non-ELF file and a host executable: solo5's texts, exit 1", () => {
    const missing = scratch.path('nothing.spt');
    const same = { sameStderr: true };
    expectSptFailure(runBoth([missing], same), `${missing}: Could not open: No such file or directory`);
    const text = scratch.path('text.spt');
    writeFileSync(text, 'not an executable at all, but long enough to hold an ELF header of 64 bytes\n');
    expectSptFailure(
      runBoth([text], same),
      `${text}: invalid executable: invalid or unsupported executable (elf header invalid while loading note)`,
    );
    const short = scratch.path('short.spt');
    writeFileSync(short, 'hello\n');
    expectSptFailure(
      runBoth([short], same),
      `${short}: invalid executable: elf header does not match the expected size (6 != 64)`,
    );
    expectSptFailure(
      runBoth(['/bin/true'], same),
      '/bin/true: invalid executable: invalid or unsupported executable (elf header invalid while loading note)',
    );
  });

  it('an hvt image: "Executable is not for the solo5-spt target", exit 1', () => {
    for (const image of [canary, canaryBlk, canaryNet])
      expectSptFailure(
        runBoth(['--mem=2', image], { sameStderr: true }),
        `${image}: Executable is not for the solo5-spt target`,
      );
  });

  it("an spt image of another ABI version (Petrel's retired 1001, or 3): refused with the version", () => {
    for (const version of [1001, 3]) {
      const image = patched(sptCanary, (b, elf) =>
        b.writeUInt32LE(version, solo5Note(elf, NOTE_ABI).at + 24),
      );
      expectSptFailure(
        runBoth([image], { sameStderr: true }),
        `${image}: Executable requests unsupported ABI version ${version}`,
      );
    }
  });

  it('no ABI note, no manifest note, an invalid manifest (an entry already marked attached)', () => {
    const same = { sameStderr: true };
    const noAbi = patched(sptCanary, (b, elf) =>
      b.writeUInt32LE(0x58494241, solo5Note(elf, NOTE_ABI).at + 8),
    );
    expectSptFailure(runBoth([noAbi], same), `${noAbi}: No Solo5 ABI information found in executable`);
    const noMft = patched(sptCanary, (b, elf) =>
      b.writeUInt32LE(0x5854464d, solo5Note(elf, NOTE_MANIFEST).at + 8),
    );
    expectSptFailure(runBoth([noMft], same), `${noMft}: No Solo5 manifest found in executable`);
    const image = patched(sptCanary, (b, elf) => {
      b[solo5Note(elf, NOTE_MANIFEST).at + 32 + 96] = 1;
    });
    expectSptFailure(runBoth([image], same), `${image}: Solo5 manifest is invalid`);
  });

  it('a segment both writable and executable is refused', () => {
    const image = patched(sptCanary, (b, elf) => {
      const text = elf.phdrs.find((p) => p.type === PT_LOAD && p.flags & PF_X);
      if (!text) throw new Error('no text segment');
      b.writeUInt32LE(text.flags | PF_W, text.at + 4);
    });
    const text = parseElf(readFileSync(image)).phdrs.find((p) => p.type === PT_LOAD && p.flags & PF_X);
    expectSptFailure(
      runBoth(['--mem=2', image], { sameStderr: true }),
      `${image}: invalid executable: phdr[${text?.index}] requests WRITE and EXEC permissions`,
    );
  });

  it('an entry point beyond --mem (1 MiB is too little for any image)', () => {
    const r = runBoth(['--mem=1', sptCanary], { sameStderr: true });
    const entry = parseElf(readFileSync(sptCanary)).entry;
    expectSptFailure(
      r,
      `${sptCanary}: invalid executable: e_entry does not fall within the memory allocation range (${entry} < 1048576 || ${entry} >= 1048576)`,
    );
  });
});

describe('the manifest against the command line (solo5.md §1.4)', () => {
  it('a device the manifest does not declare, or declares with the other type', () => {
    const disk = scratch.file('disk.img', 4096);
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
      const r = runBoth(['--mem=2', image, 'exit', '0'], { sameStderr: true });
      expect(r.stderr).toBe(
        `petrel-spt: Device '${name}' of type ${type} declared but not attached.\n` +
          'petrel-spt: All declared devices must be attached. See --help for syntax.\n',
      );
      expect(r.status).toBe(1);
    }
  });

  it("block file errors and size checks have solo5's texts", () => {
    const missing = scratch.path('missing.img');
    const same = { sameStderr: true };
    expectSptFailure(
      runBoth([`--block:storage=${missing}`, sptCanaryBlk], same),
      `Could not open block device: ${missing}: No such file or directory`,
    );
    const odd = scratch.file('odd.img', 1000);
    expectSptFailure(
      runBoth([`--block:storage=${odd}`, '--mem=2', sptCanaryBlk], same),
      'storage: Backing storage size must be block aligned (512 bytes)',
    );
    const empty = scratch.path('empty.img');
    writeFileSync(empty, '');
    expectSptFailure(
      runBoth([`--block:storage=${empty}`, '--mem=2', sptCanaryBlk], same),
      'storage: Backing storage must be at least 1 block (512 bytes) in size',
    );
    const word = '--block-sector-size:storage=1000';
    expectInvalidOption(
      runBoth([word, sptCanaryBlk], same),
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

  it("have the program headers solo5's toolchain gives spt images (solo5-spt.md §1.1)", () => {
    for (const image of [sptCanary, sptCanaryBlk, sptCanaryNet]) {
      const file = readFileSync(image);
      const elf = parseElf(file);
      expect(sptShape(elf, file)).toEqual(SOLO5_SPT_SHAPE);
      // The text segment starts at 0x100000 with the interpreter and holds the notes.
      const text = elf.phdrs[1];
      expect(text?.vaddr).toBe(0x100000);
      for (const note of elf.phdrs.filter((p) => p.type === 4))
        expect(
          note.vaddr >= (text?.vaddr ?? 0) && note.vaddr < (text?.vaddr ?? 0) + (text?.filesz ?? 0),
        ).toBe(true);
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

  it('are refused by the kernel when run directly: the interpreter does not exist', () => {
    expect(() => runSync(sptCanary, [])).toThrow(/ENOENT/u);
  });
});

describe('guest memory at its fixed address (solo5-spt.md §2.2)', () => {
  it("beyond the tender's own memory (190 TiB): solo5-spt's assertion, SIGABRT", () => {
    const r = runBoth(['--mem=200000000', sptCanary]);
    expect(r.signal).toBe('SIGABRT');
    expect(r.stderr).toMatch(/^petrel-spt: Assertion failed: /u);
  });

  it('more than the kernel will commit (10 TiB): "Error allocating guest memory", as solo5-spt', () => {
    // Without MAP_NORESERVE the overcommit policy decides; only "always overcommit" (1) would let it run.
    const always = readFileSync('/proc/sys/vm/overcommit_memory', 'utf8').trim() === '1';
    const r = runBoth(['--mem=10000000', sptCanary, 'exit', '5'], { sameStderr: true });
    if (always) expect(r.status).toBe(5);
    else expectSptFailure(r, 'Error allocating guest memory: Cannot allocate memory');
  });
});
