// A scratch directory for the files of one native test file (disk images, patched kernels,
// links): made before its tests once the binaries they run are known to be built, removed after.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { type Elf, parseElf } from './elf.js';

export interface Scratch {
  /** `disk.img`, zeroed, of the `diskBytes` given to scratchDir; usable once the tests run. */
  readonly disk: string;
  /** The path of `name` in the directory (nothing is made). */
  path(name: string): string;
  /** A file `name` of `bytes` bytes, each `fill` (0 unless given): a disk image. Its path. */
  file(name: string, bytes: number, fill?: number): string;
  /** A copy of the built image `from` with `edit` applied, under a fresh name ending `.suffix`. */
  patched(from: string, edit: (b: Buffer, elf: Elf) => void, suffix: 'hvt' | 'spt'): string;
}

/**
 * The calling file's scratch directory, named `prefix` and a random tail; `requireBuilt` runs
 * first, so a missing build fails the file before anything is made. With `diskBytes`, a zeroed
 * `disk.img` of that size is in it from the start.
 */
export function scratchDir(prefix: string, requireBuilt: () => void, diskBytes?: number): Scratch {
  let dir: string | undefined;
  let serial = 0;
  const path = (name: string): string => {
    if (dir === undefined) throw new Error('the scratch directory is made before the first test');
    return join(dir, name);
  };
  const file = (name: string, bytes: number, fill = 0): string => {
    const made = path(name);
    writeFileSync(made, Buffer.alloc(bytes, fill));
    return made;
  };
  let disk = '';
  beforeAll(() => {
    requireBuilt();
    dir = mkdtempSync(join(tmpdir(), prefix));
    if (diskBytes !== undefined) disk = file('disk.img', diskBytes);
  });
  afterAll(() => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });
  return {
    get disk() {
      return disk;
    },
    path,
    file,
    patched(from, edit, suffix) {
      const b = readFileSync(from);
      edit(b, parseElf(b));
      const made = path(`image-${serial++}.${suffix}`);
      writeFileSync(made, b);
      return made;
    },
  };
}
