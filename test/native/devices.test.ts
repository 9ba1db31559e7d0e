// Block devices on the command line and in the guest (solo5.md §1.4, §3.11, §3.13): option
// syntax, manifest matching and file errors are decided before KVM; size checks, the attach
// check and the guest's own I/O after it.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { kvmUsable } from './kvm.js';
import { fnv1a, blkPattern as pattern } from './layout.js';
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

const scratch = scratchDir('petrel-hvt-blk-', requireBuilt, 2 * 32768);

function invalidOption(r: ReturnType<typeof runTender>, word: string, before?: string): void {
  const lines = r.stderr.split('\n');
  const at = lines.indexOf(`petrel-hvt: Invalid option: \`${word}'`);
  expect(at).toBeGreaterThanOrEqual(0);
  if (before !== undefined) expect(lines[at - 1]).toBe(`petrel-hvt: ${before}`);
  expect(lines[at + 1]).toMatch(/^usage: petrel-hvt /);
  expect(r.status).toBe(1);
}

describe('--block and --block-sector-size', () => {
  it('a device the manifest does not declare, or declares with another type', () => {
    const word = `--block:storage=${scratch.disk}`;
    invalidOption(runTender([word, canary]), word, "Resource not declared in manifest: 'storage'");
    invalidOption(
      runTender(['--net:storage=tap0', canaryBlk]),
      '--net:storage=tap0',
      "Resource not declared in manifest: 'storage'",
    );
    invalidOption(
      runTender(['--block-sector-size:disk=512', canaryBlk]),
      '--block-sector-size:disk=512',
      "Resource not declared in manifest: 'disk'",
    );
  });

  it('a file that cannot be opened read-write ends the run at once, without the usage', () => {
    const missing = scratch.path('missing.img');
    const r = runTender([`--block:storage=${missing}`, canaryBlk]);
    expect(r.stderr).toBe(`petrel-hvt: Could not open block device: ${missing}: No such file or directory\n`);
    expect(r.status).toBe(1);
    const sub = scratch.path('a-directory');
    mkdirSync(sub);
    expectFailure(
      runTender([`--block:storage=${sub}`, canaryBlk]),
      `Could not open block device: ${sub}: Is a directory`,
    );
  });

  it('PATH ends at the first blank, as in solo5', () => {
    const spaced = scratch.file('with space.img', 512);
    const r = runTender([`--block:storage=${spaced}`, canaryBlk]);
    expectFailure(r, `Could not open block device: ${scratch.path('with')}: No such file or directory`);
  });

  it('malformed words are invalid options with no other message', () => {
    for (const word of [
      '--block:storage=',
      '--block:=x',
      `--block:${'a'.repeat(68)}=${scratch.disk}`,
      '--block:st-orage=x',
      '--block-sector-size:storage=x',
    ]) {
      const r = runTender([word, canaryBlk]);
      expect(r.stderr.split('\n')[0]).toBe(`petrel-hvt: Invalid option: \`${word}'`);
      expect(r.status).toBe(1);
    }
  });

  it('a sector size must be a power of two from 512 to 32768', () => {
    for (const size of ['0', '100', '256', '1000', '768', '65536']) {
      const word = `--block-sector-size:storage=${size}`;
      invalidOption(
        runTender([`--block:storage=${scratch.disk}`, word, canaryBlk]),
        word,
        'Block size must be a multiple of 2 greater than or equal 512',
      );
    }
  });

  it('an attached device and a valid sector size, in either order, pass every check before KVM', () => {
    for (const size of ['512', '4096', '32768']) {
      expectReachedKvm(
        runTender([
          `--block-sector-size:storage=${size}`,
          `--block:storage=${scratch.disk}`,
          '--mem=2',
          canaryBlk,
          'exit',
          '5',
        ]),
        5,
      );
      expectReachedKvm(
        runTender([
          `--block:storage=${scratch.disk}`,
          `--block-sector-size:storage=${size}`,
          '--mem=2',
          canaryBlk,
          'exit',
          '5',
        ]),
        5,
      );
    }
  });
});

describe('checks made after KVM is open (§1.8 step 9)', () => {
  it('the capacity must be a multiple of the sector size', () => {
    const odd = scratch.file('odd.img', 1000);
    expectLateFailure(
      [`--block:storage=${odd}`, '--mem=2', canaryBlk],
      'storage: Backing storage size must be block aligned (512 bytes)',
    );
    const three = scratch.file('three.img', 3 * 512);
    expectLateFailure(
      [`--block:storage=${three}`, '--block-sector-size:storage=1024', '--mem=2', canaryBlk],
      'storage: Backing storage size must be block aligned (1024 bytes)',
    );
  });

  it('the capacity must be at least one sector', () => {
    const empty = scratch.path('empty.img');
    writeFileSync(empty, '');
    expectLateFailure(
      [`--block:storage=${empty}`, '--mem=2', canaryBlk],
      'storage: Backing storage must be at least 1 block (512 bytes) in size',
    );
  });

  it('every declared device must be attached', () => {
    const r = expectLateFailure(
      ['--mem=2', canaryBlk, 'exit', '0'],
      'All declared devices must be attached. See --help for syntax.',
    );
    expect(r.stderr).toContain(
      "petrel-hvt: Device 'storage' of type BLOCK_BASIC declared but not attached.\n",
    );
  });
});

describe.skipIf(!kvmUsable)('the guest writes and reads every sector (blk mode)', () => {
  it.each([
    [512, 16],
    [4096, 4],
  ])(
    'sector size %i, %i sectors: the file holds the pattern and the checksum matches',
    (size, sectors) => {
      const file = scratch.file(`blk-${size}.img`, size * sectors, 0xee);
      const r = runTender(
        [`--block:storage=${file}`, `--block-sector-size:storage=${size}`, '--mem=2', canaryBlk, 'blk'],
        60_000,
      );
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      const onDisk = readFileSync(file);
      expect(onDisk.equals(pattern(sectors, size))).toBe(true);
      const m =
        /^petrel-canary blk sectors=(\d+) sector_size=(\d+) checksum=0x([0-9a-f]+) eof_ret=(-?\d+)$/m.exec(
          r.stdout,
        );
      expect(m?.slice(1, 3)).toEqual([String(sectors), String(size)]);
      expect(`0x${m?.[3]}`).toBe(fnv1a(onDisk));
      // A read at the capacity is refused by the tender with EINVAL (2), and the guest goes on.
      expect(m?.[4]).toBe('2');
    },
    70_000,
  );
});
