// Files Petrel owns on the host (state, images, block devices): written atomically, opened
// without following symlinks, and every change handed back with its undo.

import { randomBytes } from 'node:crypto';
import { unlinkSync } from 'node:fs';
import { constants, type FileHandle, lstat, mkdir, open, readdir, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import { err, ok, type PetrelError, PetrelException, type Result } from '../resources/errors.js';
import type { Name } from '../resources/name.js';
import { writeFault } from './faults.js';
import { appendOnThread, type PreviousContent, type ReplaceFailure, replaceOnThread } from './file-thread.js';
import { blockDir, blockPath } from './paths.js';
import type { Undoable } from './undo.js';

export type FileError = PetrelError<'E_HOST_IO' | 'E_HOST_SYMLINK' | 'E_HOST_EXISTS' | 'E_HOST_PATH'>;

const MIB = 1024 * 1024;
/** Temporary files carry this mark so start-up cleanup can recognise leftovers of a crash. */
const TEMP_MARK = '.petrel-tmp-';
/** A removed block file waits under this prefix until commit; `~` is not a label character. */
const TRASH_PREFIX = '~';

export function ioError(op: string, file: string, cause: unknown): FileError {
  const e = cause as NodeJS.ErrnoException;
  if (e?.code === 'ELOOP') {
    return { code: 'E_HOST_SYMLINK', message: `refusing to follow symlink ${file}`, details: { path: file } };
  }
  const text = cause instanceof Error ? cause.message : String(cause);
  return {
    code: 'E_HOST_IO',
    message: `${op} ${file} failed: ${text}`,
    details: { path: file, errno: e?.code },
  };
}

/**
 * A name beside `file` for a temporary or set-aside copy: `<lead><base><mark><pid>-<random>`.
 * The base is cut to 200 bytes so the result stays below NAME_MAX even for the longest names.
 */
function sideName(file: string, lead: string, mark: string): string {
  const base = Buffer.from(path.basename(file)).subarray(0, 200).toString();
  return path.join(
    path.dirname(file),
    `${lead}${base}${mark}${process.pid}-${randomBytes(6).toString('hex')}`,
  );
}

/** A temporary name beside `file` that start-up cleanup recognises as a crash's leftover. */
export function temporaryName(file: string): string {
  return sideName(file, '.', TEMP_MARK);
}

/** True for names this module gives its temporary and trash files. */
export function isTemporaryFileName(fileName: string): boolean {
  return fileName.includes(TEMP_MARK) || fileName.startsWith(TRASH_PREFIX);
}

/** Opens `file` with `flags | O_NOFOLLOW`: a symlink as the last component is E_HOST_SYMLINK. */
export async function openNoFollow(
  file: string,
  flags: number,
  mode = 0o600,
): Promise<Result<FileHandle, FileError>> {
  try {
    return ok(await open(file, flags | constants.O_NOFOLLOW, mode));
  } catch (cause) {
    return fail(ioError('open', file, cause));
  }
}

function fail<E extends PetrelError>(error: E): { readonly ok: false; readonly error: E } {
  return { ok: false, error };
}

/**
 * Makes each of `dirs` with its missing parents, mode 0700 (petreld's alone); one that exists is
 * left as it is. Stops at the first that cannot be made.
 */
export async function makePrivateDirs(...dirs: readonly string[]): Promise<Result<void, FileError>> {
  for (const dir of dirs) {
    try {
      await mkdir(dir, { recursive: true, mode: 0o700 });
    } catch (cause) {
      return fail(ioError('mkdir', dir, cause));
    }
  }
  return ok(undefined);
}

/** fsync of a directory, so a rename or unlink in it survives a power cut. */
export async function fsyncDir(dir: string): Promise<void> {
  const handle = await open(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Unlinks `file`; a missing file is fine. Throws on other errors. */
export async function unlinkIfPresent(file: string): Promise<void> {
  try {
    await unlink(file);
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code !== 'ENOENT') throw cause;
  }
}

/** unlinkIfPresent, synchronously (for the few bytes of the run directory's records). */
export function unlinkIfPresentSync(file: string): void {
  try {
    unlinkSync(file);
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code !== 'ENOENT') throw cause;
  }
}

/** A failure of the file thread in the terms of this module. */
function threadError(failure: ReplaceFailure): FileError {
  if (failure.code === 'symlink') {
    return {
      code: 'E_HOST_SYMLINK',
      message: `refusing to replace symlink ${failure.path}`,
      details: { path: failure.path },
    };
  }
  if (failure.code === 'not-file') {
    return {
      code: 'E_HOST_IO',
      message: `${failure.path} exists and is not a regular file`,
      details: { path: failure.path },
    };
  }
  return ioError(
    failure.step,
    failure.path,
    Object.assign(new Error(failure.message), { code: failure.code }),
  );
}

/** Replaces `file` by `data` on the file thread; resolves with what it held when asked. */
async function replace(
  file: string,
  data: Uint8Array,
  options: { mode: number; durable: boolean; previous?: boolean },
): Promise<Result<PreviousContent | null, FileError>> {
  const outcome = await replaceOnThread({
    file,
    temp: temporaryName(file),
    data,
    mode: options.mode,
    durable: options.durable,
    previous: options.previous ?? false,
  });
  return outcome.ok ? ok(outcome.previous) : fail(threadError(outcome.failure));
}

export interface WriteOptions {
  /** Permission bits of the new file. Default 0o600. */
  readonly mode?: number;
  /**
   * fsync the file and its directory (default true). Artefacts of the run directory are
   * recreated at every start, so only a crash of petreld — not of the machine — must not see
   * them half-written, and the rename alone guarantees that.
   */
  readonly durable?: boolean;
}

/**
 * Replaces `file` with `data` so that a reader (or a crash) sees the old or the new content,
 * never a mix: temp file in the same directory, fsync, rename, fsync the directory. A symlink
 * at `file` is refused. Undo puts the previous content back (atomically) or removes the file
 * if there was none.
 */
export async function writeFileAtomic(
  file: string,
  data: Uint8Array,
  options: WriteOptions = {},
): Promise<Result<Undoable<string>, FileError>> {
  const mode = options.mode ?? 0o600;
  const durable = options.durable ?? true;
  const written = await replace(file, data, { mode, durable, previous: true });
  if (!written.ok) return written;
  const before = written.value;
  const undo = async (): Promise<void> => {
    if (before === null) {
      await unlinkIfPresent(file);
      if (durable) await fsyncDir(path.dirname(file));
      return;
    }
    const restored = await replace(file, before.data, { mode: before.mode, durable });
    if (!restored.ok) throw new PetrelException(restored.error);
  };
  return ok({ value: file, undo });
}

/** Bytes of a block device of `sizeMiB` MiB, or Albatross' error for sizes that make none. */
export function blockBytes(sizeMiB: number): Result<number, PetrelError<'E_BLOCK_SIZE'>> {
  if (!Number.isSafeInteger(sizeMiB) || sizeMiB < 1 || !Number.isSafeInteger(sizeMiB * MIB)) {
    return err('E_BLOCK_SIZE', 'overflow while computing bytes', { sizeMiB });
  }
  return ok(sizeMiB * MIB);
}

/**
 * Creates `<state-dir>/block/<blockname>` (directory 0700 if missing, file 0600), exactly
 * `sizeMiB` MiB long and sparse (reads as zeros). An existing file, even a symlink, is
 * E_HOST_EXISTS and is left alone. Undo deletes the new file.
 */
export async function createBlockFile(
  stateDir: string,
  blockName: Name,
  sizeMiB: number,
): Promise<Result<Undoable<string>, FileError | PetrelError<'E_BLOCK_SIZE'>>> {
  const bytes = blockBytes(sizeMiB);
  if (!bytes.ok) return bytes;
  const file = blockPath(stateDir, blockName);
  if (!file.ok) return file;
  const dir = blockDir(stateDir);
  const made = await makePrivateDirs(dir);
  if (!made.ok) return made;
  let handle: FileHandle;
  try {
    const fault = writeFault('block-create', file.value);
    if (fault !== null) throw fault;
    handle = await open(
      file.value,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      0o600,
    );
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'EEXIST') {
      return err('E_HOST_EXISTS', `block device file ${file.value} already exists`, { path: file.value });
    }
    return fail(ioError('create', file.value, cause));
  }
  try {
    const fault = writeFault('block-extend', file.value);
    if (fault !== null) throw fault;
    await handle.truncate(bytes.value);
    await handle.sync();
    await handle.close();
    await fsyncDir(dir);
  } catch (cause) {
    await handle.close().catch(() => undefined);
    await unlinkIfPresent(file.value).catch(() => undefined);
    return fail(ioError('extend', file.value, cause));
  }
  const created = file.value;
  return ok({
    value: created,
    undo: async () => {
      await unlinkIfPresent(created);
      await fsyncDir(dir);
    },
  });
}

/**
 * Removes a block device file in two phases so the removal can be undone: the file is renamed
 * aside now (`~<name>.<random>`, a name no block scan takes for a device), undo renames it
 * back, and commit deletes it. A missing file is E_HOST_IO (ENOENT); a symlink is refused.
 */
export async function removeBlockFile(
  stateDir: string,
  blockName: Name,
): Promise<Result<Undoable<string>, FileError>> {
  const file = blockPath(stateDir, blockName);
  if (!file.ok) return file;
  const target = file.value;
  try {
    const st = await lstat(target);
    if (st.isSymbolicLink())
      return err('E_HOST_SYMLINK', `refusing to remove symlink ${target}`, { path: target });
    if (!st.isFile()) return err('E_HOST_IO', `${target} is not a regular file`, { path: target });
  } catch (cause) {
    return fail(ioError('lstat', target, cause));
  }
  const dir = path.dirname(target);
  const aside = sideName(target, TRASH_PREFIX, '.');
  try {
    await rename(target, aside);
    await fsyncDir(dir);
  } catch (cause) {
    return fail(ioError('rename', target, cause));
  }
  return ok({
    value: target,
    undo: async () => {
      await rename(aside, target);
      await fsyncDir(dir);
    },
    commit: async () => {
      await unlinkIfPresent(aside);
      await fsyncDir(dir);
    },
  });
}

/**
 * Appends `data` to `file` durably (fdatasync). On failure the file is cut back to what it
 * held, so the next append does not follow a torn one (details.errno `ETORN` when even that
 * failed).
 */
export async function appendDurably(file: string, data: Uint8Array): Promise<Result<void, FileError>> {
  const outcome = await appendOnThread({ file, data });
  return outcome.ok ? ok(undefined) : fail(threadError(outcome.failure));
}

/**
 * After a crash: a block file set aside by `removeBlockFile` whose removal was never committed
 * (the original name is free) is put back; other set-aside and temporary files in the block
 * directory are deleted. Returns what it did, for the log.
 */
export async function recoverBlockDirectory(stateDir: string): Promise<Result<string[], FileError>> {
  const dir = blockDir(stateDir);
  const listed = await listDirectory(dir);
  if (!listed.ok) return listed;
  const entries = [...listed.value];
  const done: string[] = [];
  const aside = new RegExp(`^${TRASH_PREFIX}(.+)\\.\\d+-[0-9a-f]{12}$`, 'u');
  for (const entry of entries.filter(isTemporaryFileName)) {
    const file = path.join(dir, entry);
    const original = aside.exec(entry)?.[1];
    try {
      if (original !== undefined && !entries.includes(original)) {
        await rename(file, path.join(dir, original));
        entries.push(original);
        done.push(`restored block ${original}, whose removal a crash interrupted`);
      } else {
        await unlinkIfPresent(file);
        done.push(`removed leftover ${entry}`);
      }
    } catch (cause) {
      return fail(ioError('recover', file, cause));
    }
  }
  return ok(done);
}

/** Deletes temporary files an interrupted atomic write left in `dir`. */
export async function removeTemporaryFiles(dir: string): Promise<Result<string[], FileError>> {
  const listed = await listDirectory(dir);
  if (!listed.ok) return listed;
  const entries = [...listed.value];
  const done: string[] = [];
  for (const entry of entries.filter((e) => e.includes(TEMP_MARK))) {
    try {
      await unlinkIfPresent(path.join(dir, entry));
      done.push(`removed leftover ${entry}`);
    } catch (cause) {
      return fail(ioError('unlink', path.join(dir, entry), cause));
    }
  }
  return ok(done);
}

/** The entries of `dir`; a directory that does not exist is empty. */
export async function listDirectory(dir: string): Promise<Result<string[], FileError>> {
  try {
    return ok(await readdir(dir));
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'ENOENT') return ok([]);
    return fail(ioError('readdir', dir, cause));
  }
}
