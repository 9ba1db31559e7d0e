// Free space of the state directory, so that a full disk refuses new work before it can break
// committed state: what creates, block devices and image streams may still take, and the
// reserve that lets freeing commands commit on a full disk. Block files are sparse; their
// unwritten part counts as taken (their full size is promised to the guest), so only something
// outside Petrel filling the disk can make a guest meet ENOSPC.

import { closeSync, constants, openSync, writeSync } from 'node:fs';
import { readdir, stat, statfs } from 'node:fs/promises';
import path from 'node:path';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import { writeFault } from './faults.js';
import { unlinkIfPresent } from './files.js';
import { blockDir } from './paths.js';

/**
 * What a create needs in the run directory: its image link, its console FIFO and its PID record,
 * a block each at most (a FIFO takes an inode only, a short link none on tmpfs).
 */
export const RUN_DIR_NEEDED = 16 * 1024;

/** The refusal of a create for want of room in the run directory. */
export function runDirRefusal(runDir: string, free: number, cause?: string): SpaceError {
  return err(
    'E_HOST_NOSPACE',
    `could not create unikernel: no space in the run directory ${runDir}: ${free} bytes free, ` +
      `${RUN_DIR_NEEDED} needed${cause === undefined ? '' : ` (${cause})`}`,
    { runDir, free, needed: RUN_DIR_NEEDED, ...(cause === undefined ? {} : { cause }) },
  ).error;
}

/** Refuses a create before it makes anything when the run directory has not the room it needs. */
export async function checkRunDir(runDir: string): Promise<Result<void, SpaceError>> {
  const free = await fileSystemFree(runDir).catch(() => Number.POSITIVE_INFINITY);
  return free < RUN_DIR_NEEDED ? { ok: false, error: runDirRefusal(runDir, free) } : ok(undefined);
}

/**
 * A run-directory step's failure: when it is ENOSPC or EDQUOT (the FIFO, the PID record, the
 * image link), the refusal that names the space; any other error as it was.
 */
export async function inRunDir<E extends PetrelError>(runDir: string, error: E): Promise<E | SpaceError> {
  const errno = (error.details as { errno?: unknown } | undefined)?.errno;
  // mkfifo (a command: Node has none) says it in words.
  const said = /No space left on device|Disk quota exceeded/u.test(error.message);
  if (!isNoSpace({ code: errno }) && !said) return error;
  const free = await fileSystemFree(runDir).catch(() => 0);
  return runDirRefusal(runDir, free, error.message);
}

/** `<state-dir>/petrel.reserve`: preallocated bytes given up when a freeing commit needs room. */
export const RESERVE_FILE = 'petrel.reserve';

export type SpaceError = PetrelError<'E_HOST_NOSPACE'>;

/** True for the errors of a full file system or an exhausted quota. */
export function isNoSpace(cause: unknown): boolean {
  const code = (cause as { code?: unknown; errno?: unknown } | null)?.code;
  return code === 'ENOSPC' || code === 'EDQUOT';
}

/** Bytes the file system of `dir` lets an unprivileged writer have, as statfs(2) says. */
export async function fileSystemFree(dir: string): Promise<number> {
  const fs = await statfs(dir);
  return Number(fs.bavail) * Number(fs.bsize);
}

/** Bytes block files may still grow into: their sizes minus what they have allocated. */
async function promisedToBlocks(stateDir: string): Promise<number> {
  const dir = blockDir(stateDir);
  let entries: string[];
  try {
    entries = await readdir(dir);
  } catch {
    return 0;
  }
  let promised = 0;
  for (const entry of entries) {
    const st = await stat(path.join(dir, entry)).catch(() => null);
    if (st?.isFile()) promised += Math.max(0, st.size - st.blocks * 512);
  }
  return promised;
}

export interface SpaceOptions {
  readonly stateDir: string;
  /** Bytes of the reserve file (0: none). */
  readonly reserveBytes: number;
  /** Free bytes no create, block device or stream may take. */
  readonly minFree: number;
}

/** The state directory's space: checks before writes, and the reserve. */
export class StateSpace {
  readonly #options: SpaceOptions;
  readonly #reserve: string;

  constructor(options: SpaceOptions) {
    this.#options = options;
    this.#reserve = path.join(options.stateDir, RESERVE_FILE);
  }

  get minFree(): number {
    return this.#options.minFree;
  }

  /** Free bytes for Petrel's writes: the file system's, less what block files may still take. */
  async free(): Promise<number> {
    const [fs, promised] = await Promise.all([
      fileSystemFree(this.#options.stateDir),
      promisedToBlocks(this.#options.stateDir),
    ]);
    return Math.max(0, fs - promised);
  }

  /** The refusal of a write of `needed` bytes when `free` are left. */
  refusal(what: string, free: number, needed: number): SpaceError {
    const floor = this.#options.minFree;
    return err(
      'E_HOST_NOSPACE',
      `${what}: no space in the state directory ${this.#options.stateDir}: ${free} bytes free, ` +
        `${needed} needed${floor > 0 ? ` and ${floor} kept free (stateMinFree)` : ''}`,
      { stateDir: this.#options.stateDir, free, needed, minFree: floor },
    ).error;
  }

  /** Refuses, before anything is written, `needed` bytes that would leave less than the floor. */
  async check(what: string, needed: number): Promise<Result<void, SpaceError>> {
    const free = await this.free().catch(() => Number.POSITIVE_INFINITY);
    if (free - needed < this.#options.minFree) return { ok: false, error: this.refusal(what, free, needed) };
    return ok(undefined);
  }

  /**
   * Makes the reserve whole if it is not (best effort: on a full disk it stays short until
   * space comes back). Written with zeros, so its blocks are really allocated.
   */
  async refill(): Promise<boolean> {
    const want = this.#options.reserveBytes;
    if (want === 0) return true;
    const st = await stat(this.#reserve).catch(() => null);
    if (st !== null && st.size >= want && st.blocks * 512 >= want) return true;
    const free = await fileSystemFree(this.#options.stateDir).catch(() => 0);
    if (free < want + this.#options.minFree) return false;
    let fd: number | null = null;
    try {
      fd = openSync(this.#reserve, constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
      const zeros = Buffer.alloc(Math.min(want, 1024 * 1024));
      for (let at = 0; at < want; ) {
        const fault = writeFault('reserve', this.#reserve);
        if (fault !== null) throw fault;
        at += writeSync(fd, zeros, 0, Math.min(zeros.length, want - at), at);
      }
      return true;
    } catch {
      if (fd !== null) closeSync(fd);
      fd = null;
      await unlinkIfPresent(this.#reserve).catch(() => undefined);
      return false;
    } finally {
      if (fd !== null) closeSync(fd);
    }
  }

  /** Gives the reserve up, so a freeing commit finds room; true when there was one. */
  async release(): Promise<boolean> {
    if (this.#options.reserveBytes === 0) return false;
    const st = await stat(this.#reserve).catch(() => null);
    if (st === null) return false;
    await unlinkIfPresent(this.#reserve).catch(() => undefined);
    return true;
  }
}
