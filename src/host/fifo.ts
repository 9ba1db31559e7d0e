// The console FIFO `<run-dir>/fifo/<name>` that a tender writes its output to: made with the
// `mkfifo` command (Node has no mkfifo(2)), checked to really be a FIFO, removed with its undo.

import type { Dirent } from 'node:fs';
import { chmod, lstat, readdir, rename } from 'node:fs/promises';
import path from 'node:path';
import { err, ok, type PetrelError, PetrelException, type Result } from '../resources/errors.js';
import type { Name } from '../resources/name.js';
import { runCommand } from './command.js';
import { writeFault } from './faults.js';
import { type FileError, ioError, makePrivateDirs, unlinkIfPresent } from './files.js';
import { containedPath, fifoDir, fifoPath } from './paths.js';
import type { Undoable } from './undo.js';

export type FifoError = FileError | PetrelError<'E_HOST_NOT_FIFO' | 'E_HOST_COMMAND'>;

/** Mode of console FIFOs (semantics §1.2): the console group may read them. */
export const FIFO_MODE = 0o640;

type Kind = 'absent' | 'fifo' | 'other';

async function kindOf(file: string): Promise<Result<Kind, FileError>> {
  try {
    return ok((await lstat(file)).isFIFO() ? 'fifo' : 'other');
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'ENOENT') return ok('absent');
    return { ok: false, error: ioError('lstat', file, cause) };
  }
}

function notFifo(file: string): Result<never, FifoError> {
  return err('E_HOST_NOT_FIFO', `file ${file} exists and is not a fifo`, { path: file });
}

/** How a new FIFO comes into being at a path: `mkfifo` by default, or from a FifoPool. */
export type FifoCreator = (file: string) => Promise<Result<unknown, FifoError>>;

const mkfifo: FifoCreator = (file) => runCommand('mkfifo', ['-m', FIFO_MODE.toString(8), '--', file]);

/** Creates a FIFO at `file` (mode 0640) unless one is there; anything else there is refused. */
export async function makeFifoAt(
  file: string,
  create: FifoCreator = mkfifo,
): Promise<Result<Undoable<string>, FifoError>> {
  const before = await kindOf(file);
  if (!before.ok) return before;
  if (before.value === 'other') return notFifo(file);
  // A FIFO left from an earlier run of this name is reused as Albatross does, and left in place
  // on undo: its reader (the console) may still hold it.
  if (before.value === 'fifo') return ok({ value: file, undo: async () => undefined });
  // A test's ENOSPC or EDQUOT for the FIFO (src/host/faults.ts), where mkfifo would meet it.
  const fault = writeFault('fifo', file);
  if (fault !== null) return { ok: false, error: ioError('mkfifo', file, fault) };
  const made = await create(file);
  if (!made.ok) {
    const now = await kindOf(file);
    if (now.ok && now.value === 'other') return notFifo(file);
    return made;
  }
  const after = await kindOf(file);
  if (!after.ok) return after;
  if (after.value !== 'fifo') return notFifo(file);
  try {
    await chmod(file, FIFO_MODE);
  } catch (cause) {
    return { ok: false, error: ioError('chmod', file, cause) };
  }
  return {
    ok: true,
    value: {
      value: file,
      undo: async () => {
        const removed = await removeFifoAt(file);
        if (!removed.ok) throw new PetrelException(removed.error);
      },
    },
  };
}

/** Makes `<run-dir>/fifo/<name>` (creating `<run-dir>/fifo` if needed). */
export async function makeFifo(
  runDir: string,
  name: Name,
  create: FifoCreator = mkfifo,
): Promise<Result<Undoable<string>, FifoError>> {
  const file = fifoPath(runDir, name);
  if (!file.ok) return file;
  // Only the tender (writer) and petrel-holder (reader) open a FIFO, both as petreld's user:
  // the directory keeps out a group that petreld shares with its sockets' clients (the TLS
  // endpoint's), which could otherwise read, and so take, console bytes.
  const dir = await makePrivateDirs(fifoDir(runDir));
  if (!dir.ok) return dir;
  return makeFifoAt(file.value, create);
}

/** Spare FIFOs made per `mkfifo` run. */
const BATCH = 32;

/**
 * Makes FIFOs in batches: Node has no mkfifo(2), and a process per unikernel costs
 * milliseconds, so one `mkfifo` run makes BATCH spares in `<run-dir>/fifo/.spare-<pid>` and each
 * console FIFO is then a rename. Start-up cleanup removes spares a previous run left.
 */
export class FifoPool {
  readonly #dir: string;
  readonly #spare: string[] = [];
  #made = 0;
  #refilling: Promise<Result<unknown, FifoError>> | null = null;

  constructor(runDir: string) {
    this.#dir = path.join(fifoDir(runDir), `${SPARE_PREFIX}${process.pid}`);
  }

  readonly create: FifoCreator = async (file) => {
    if (this.#spare.length === 0) {
      this.#refilling ??= this.#refill().finally(() => {
        this.#refilling = null;
      });
      const refilled = await this.#refilling;
      if (!refilled.ok) return refilled;
    }
    const spare = this.#spare.pop();
    if (spare === undefined) return this.create(file);
    try {
      await rename(spare, file);
      return ok(undefined);
    } catch (cause) {
      return { ok: false, error: ioError('rename', file, cause) };
    }
  };

  async #refill(): Promise<Result<unknown, FifoError>> {
    const dir = await makePrivateDirs(this.#dir);
    if (!dir.ok) return dir;
    const names = Array.from({ length: BATCH }, () => path.join(this.#dir, String(this.#made++)));
    const made = await runCommand('mkfifo', ['-m', FIFO_MODE.toString(8), '--', ...names]);
    if (!made.ok) return made;
    this.#spare.push(...names);
    return ok(undefined);
  }
}

/** Directory-name prefix of spare FIFOs inside `<run-dir>/fifo`. */
export const SPARE_PREFIX = '.spare-';

/** Removes the FIFO at `file`; absent is fine; any other kind of file is refused, untouched. */
export async function removeFifoAt(file: string): Promise<Result<void, FifoError>> {
  const kind = await kindOf(file);
  if (!kind.ok) return kind;
  if (kind.value === 'other') return notFifo(file);
  if (kind.value === 'absent') return ok(undefined);
  try {
    await unlinkIfPresent(file);
    return ok(undefined);
  } catch (cause) {
    return { ok: false, error: ioError('unlink', file, cause) };
  }
}

/** Removes `<run-dir>/fifo/<name>`. */
export async function removeFifo(runDir: string, name: Name): Promise<Result<void, FifoError>> {
  const file = fifoPath(runDir, name);
  if (!file.ok) return file;
  return removeFifoAt(file.value);
}

export interface FifoListing {
  /** Paths of the FIFOs in `<run-dir>/fifo`. */
  readonly fifos: readonly string[];
  /** Paths of other entries there, which start-up cleanup leaves alone (with a warning). */
  readonly others: readonly string[];
}

/** What is in `<run-dir>/fifo` (a missing directory is empty), for start-up cleanup. */
export async function listFifos(runDir: string): Promise<Result<FifoListing, FileError>> {
  const dir = fifoDir(runDir);
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'ENOENT') return ok({ fifos: [], others: [] });
    return { ok: false, error: ioError('readdir', dir, cause) };
  }
  const fifos: string[] = [];
  const others: string[] = [];
  for (const entry of entries) {
    const file = containedPath(dir, entry.name);
    if (!file.ok) continue;
    (entry.isFIFO() ? fifos : others).push(file.value);
  }
  fifos.sort();
  others.sort();
  return ok({ fifos, others });
}
