// The content-addressed image store (petrel-differences.md (j)): `<state-dir>/images/<sha256>`,
// one read-only file per distinct inflated image, which tenders run (through a per-unikernel
// link in the run directory). An image arrives as a stream, is inflated, hashed and written to
// a temporary file that is fsynced (staging, outside any transaction), and enters the store by
// a link and a directory fsync (inside the transaction, before any state refers to it).

import { createHash } from 'node:crypto';
import { chmod, constants, type FileHandle, link, lstat, open, rename, rm, symlink } from 'node:fs/promises';
import path from 'node:path';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import type { Name } from '../resources/name.js';
import { writeFault } from './faults.js';
import {
  type FileError,
  fsyncDir,
  ioError,
  isTemporaryFileName,
  listDirectory,
  temporaryName,
  unlinkIfPresent,
} from './files.js';
import { TransferCollector } from './garbage.js';
import { imagePath } from './paths.js';
import { isNoSpace, type SpaceError, type StateSpace } from './space.js';
import type { Undoable } from './undo.js';
import { inflateChunks, OutputLimitError } from './zstream.js';

/** An image in the store: SHA-256 of the inflated image (64 lower-case hex digits), its size. */
export interface ImageRef {
  readonly digest: string;
  readonly size: number;
}

/** A received image, inflated, hashed and fsynced in a temporary file beside the store's. */
export interface StagedImage extends ImageRef {
  readonly file: string;
}

export type ImageError =
  | FileError
  | SpaceError
  | PetrelError<
      'E_IMAGE_INFLATE' | 'E_IMAGE_TOO_LARGE' | 'E_IMAGE_STREAM' | 'E_IMAGE_CORRUPT' | 'E_IMAGE_MISSING'
    >;

export interface StageOptions {
  /** The chunks are a zlib stream (the configuration's `compressed`). */
  readonly compressed: boolean;
  /** Most bytes accepted as they arrive (the frame limit, petrel-differences.md (c)). */
  readonly maxBytes: number;
  /** Most bytes an image may inflate to. */
  readonly maxInflated: number;
  /**
   * The state directory's space: an image of known size that cannot fit is refused before
   * anything is written, a stream as soon as free space would fall below the floor.
   */
  readonly space?: StateSpace;
}

/** Thrown inside staging when the next batch would not fit: becomes the refusal. */
class NoRoom extends Error {
  constructor(readonly refusal: SpaceError) {
    super(refusal.message);
  }
}

/** Writes are gathered to this size before each system call (references, not copies). */
const BATCH = 1024 * 1024;
const DIGEST = /^[0-9a-f]{64}$/u;
/**
 * Images are never written once stored: read only. Readable by all, since a jailed tender reads
 * its own through a read-only bind (src/host/jail.ts); no one else gets in, as the store lies in
 * the state directory, which only root may enter (the preflight checks it is 0700).
 */
export const IMAGE_MODE = 0o444;

export function imagesDir(stateDir: string): string {
  return path.join(stateDir, 'images');
}

/** `<state-dir>/images/<digest>`. */
export function storedImagePath(stateDir: string, digest: string): string {
  if (!DIGEST.test(digest)) throw new Error(`not a SHA-256 digest: ${JSON.stringify(digest)}`);
  return path.join(imagesDir(stateDir), digest);
}

async function* counted(
  chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  limit: number,
  arrived: (bytes: number) => void,
) {
  let total = 0;
  for await (const chunk of chunks) {
    total += chunk.length;
    arrived(chunk.length);
    if (total > limit) throw new OutputLimitError(limit);
    yield chunk;
  }
}

/**
 * Receives an image into a temporary file of the store directory: inflated when `compressed`,
 * hashed, fsynced. Nothing refers to it yet; `commitImage` moves it into the store, and a
 * crash before that leaves a temporary that start-up removes.
 */
export async function stageImage(
  stateDir: string,
  chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  options: StageOptions,
): Promise<Result<StagedImage, ImageError>> {
  const dir = imagesDir(stateDir);
  const file = temporaryName(path.join(dir, 'staged'));
  const { space } = options;
  // Whole in its frame: its size is known (inflating makes it larger, checked as it grows).
  if (space !== undefined && !(Symbol.asyncIterator in chunks)) {
    let known = 0;
    for (const chunk of chunks as Iterable<Uint8Array>) known += chunk.length;
    const fits = await space.check('create: the image does not fit', known);
    if (!fits.ok) return fits;
  }
  let handle: FileHandle;
  try {
    handle = await open(
      file,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      IMAGE_MODE,
    );
  } catch (cause) {
    return { ok: false, error: ioError('create', file, cause) };
  }
  const hash = createHash('sha256');
  let size = 0;
  let batch: Uint8Array[] = [];
  let batched = 0;
  const flush = async () => {
    if (batch.length === 0) return;
    const pieces = batch;
    const bytes = batched;
    batch = [];
    batched = 0;
    if (space !== undefined) {
      const free = await space.free().catch(() => Number.POSITIVE_INFINITY);
      if (free - bytes < space.minFree) {
        const refused = space.refusal('create: the image stream does not fit', free, size);
        throw new NoRoom(refused);
      }
    }
    const fault = writeFault('stage', file);
    if (fault !== null) throw fault;
    await handle.writev(pieces);
  };
  let failure: ImageError | null = null;
  const garbage = new TransferCollector();
  // Chunks that stream in are garbage once written; an image in its frame's memory is not.
  const streamed = Symbol.asyncIterator in chunks;
  let held = 0;
  try {
    const arrived = streamed ? (bytes: number) => garbage.moved(bytes) : (bytes: number) => (held += bytes);
    const input = counted(chunks, options.maxBytes, arrived);
    const pieces = options.compressed ? inflateChunks(input, options.maxInflated) : input;
    for await (const piece of pieces) {
      // An inflater's pieces are buffers of their own, whether the input streamed or not.
      if (options.compressed) garbage.moved(piece.length);
      hash.update(piece);
      size += piece.length;
      if (!options.compressed && size > options.maxInflated) throw new OutputLimitError(options.maxInflated);
      batch.push(piece);
      batched += piece.length;
      if (batched >= BATCH) await flush();
    }
    await flush();
    const fault = writeFault('stage-sync', file);
    if (fault !== null) throw fault;
    await handle.sync();
  } catch (cause) {
    failure = await stageError(cause, options, file, size);
  } finally {
    batch = [];
    await handle.close().catch(() => undefined);
    garbage.finished(held);
  }
  if (failure !== null) {
    await unlinkIfPresent(file).catch(() => undefined);
    return { ok: false, error: failure };
  }
  return ok({ digest: hash.digest('hex'), size, file });
}

async function stageError(
  cause: unknown,
  options: StageOptions,
  file: string,
  size: number,
): Promise<ImageError> {
  if (cause instanceof NoRoom) return cause.refusal;
  if (isNoSpace(cause) && options.space !== undefined) {
    const free = await options.space.free().catch(() => 0);
    const refused = options.space.refusal(
      `create: writing ${file} failed (${(cause as NodeJS.ErrnoException).code})`,
      free,
      size,
    );
    return refused;
  }
  if (cause instanceof OutputLimitError) {
    return cause.limit === options.maxInflated && options.compressed
      ? {
          code: 'E_IMAGE_INFLATE',
          message: `failed to uncompress: the image inflates to more than ${cause.limit} bytes`,
        }
      : { code: 'E_IMAGE_TOO_LARGE', message: `image exceeds the limit of ${cause.limit} bytes` };
  }
  const e = cause as NodeJS.ErrnoException;
  if (typeof e?.code === 'string' && e.code.startsWith('Z_'))
    return { code: 'E_IMAGE_INFLATE', message: `failed to uncompress: ${e.message}` };
  if (typeof e?.code === 'string' && e.syscall !== undefined) return ioError('write', file, cause);
  return { code: 'E_IMAGE_STREAM', message: `receiving the image failed: ${e?.message ?? String(cause)}` };
}

/** Drops a staged image that no transaction took. */
export async function discardStaged(staged: StagedImage): Promise<void> {
  await unlinkIfPresent(staged.file).catch(() => undefined);
}

/**
 * Moves a staged image into the store, durably (link, directory fsync). An image already there
 * stays: its file may be open in a jail being made (petrel-jail opens each file, then binds it
 * from that descriptor, and the kernel refuses to bind a file no longer linked: ENOENT), and a
 * new copy renamed over it would unlink it; the staged copy of the same bytes goes instead. A
 * stored copy that is no regular file of the image's size (damaged) is replaced.
 */
export async function commitImage(stateDir: string, staged: StagedImage): Promise<Result<string, FileError>> {
  const target = storedImagePath(stateDir, staged.digest);
  try {
    const fault = writeFault('store', target);
    if (fault !== null) throw fault;
    // link(2) is "create if absent" in one step: of two creates of one image, one links it.
    const linked = await link(staged.file, target).then(
      () => true,
      (cause: NodeJS.ErrnoException) => {
        if (cause.code !== 'EEXIST') throw cause;
        return false;
      },
    );
    if (!linked) {
      const there = await lstat(target).catch(() => null);
      if (there === null || !there.isFile() || there.size !== staged.size) await rename(staged.file, target);
    }
    await unlinkIfPresent(staged.file);
    await fsyncDir(path.dirname(target));
  } catch (cause) {
    return { ok: false, error: ioError('link', target, cause) };
  }
  return ok(target);
}

/** Removes a stored image (nothing refers to it any more), durably. */
export async function removeImage(stateDir: string, digest: string): Promise<Result<void, FileError>> {
  const file = storedImagePath(stateDir, digest);
  try {
    await unlinkIfPresent(file);
    await fsyncDir(path.dirname(file));
  } catch (cause) {
    return { ok: false, error: ioError('unlink', file, cause) };
  }
  return ok(undefined);
}

/** Opens a stored image for reading, checking it is there with its size (not its digest). */
export async function openImage(stateDir: string, ref: ImageRef): Promise<Result<FileHandle, ImageError>> {
  const file = storedImagePath(stateDir, ref.digest);
  let handle: FileHandle;
  try {
    handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'ENOENT')
      return err('E_IMAGE_MISSING', `image ${ref.digest} is missing from the store`, { digest: ref.digest });
    return { ok: false, error: ioError('open', file, cause) };
  }
  const size = (await handle.stat()).size;
  if (size !== ref.size) {
    await handle.close();
    return err('E_IMAGE_CORRUPT', `image ${ref.digest} in the store has ${size} bytes, not ${ref.size}`, {
      digest: ref.digest,
    });
  }
  return ok(handle);
}

/**
 * The bytes of an open image from its start, in fresh pieces of up to `piece` bytes (a socket
 * may hold a piece until it is sent, so none is reused).
 */
export async function* readImageFrom(handle: FileHandle, piece = BATCH): AsyncGenerator<Buffer> {
  let position = 0;
  for (;;) {
    const buffer = Buffer.allocUnsafe(piece);
    const { bytesRead } = await handle.read(buffer, 0, piece, position);
    if (bytesRead === 0) return;
    position += bytesRead;
    yield bytesRead === piece ? buffer : buffer.subarray(0, bytesRead);
  }
}

/**
 * Reads a stored image whole and checks its SHA-256 (when an image is read again: restart, get):
 * a damaged image is E_IMAGE_CORRUPT, a missing one E_IMAGE_MISSING.
 */
export async function verifyImage(stateDir: string, ref: ImageRef): Promise<Result<void, ImageError>> {
  const opened = await openImage(stateDir, ref);
  if (!opened.ok) return opened;
  const hash = createHash('sha256');
  try {
    for await (const piece of readImageFrom(opened.value)) hash.update(piece);
  } catch (cause) {
    return { ok: false, error: ioError('read', storedImagePath(stateDir, ref.digest), cause) };
  } finally {
    await opened.value.close();
  }
  const actual = hash.digest('hex');
  if (actual !== ref.digest)
    return err(
      'E_IMAGE_CORRUPT',
      `image ${ref.digest} in the store is damaged (its SHA-256 is now ${actual})`,
      {
        digest: ref.digest,
      },
    );
  return ok(undefined);
}

export interface StoreCleanup {
  /** What was removed: temporaries and images nothing refers to. */
  readonly removed: readonly string[];
  /** Referenced images that are not there, or not with their size. */
  readonly missing: readonly { readonly digest: string; readonly reason: string }[];
}

/**
 * Start-up: removes temporaries and every image `referenced` does not name, and checks that
 * each referenced image is present with its size (hashing every image would make a start cost
 * as much as reading the whole store; the digest is checked when an image is next read). The
 * store directory is made root's alone, and images a release before the jails' stored 0400 get
 * IMAGE_MODE.
 */
export async function cleanStore(
  stateDir: string,
  referenced: ReadonlyMap<string, number>,
): Promise<Result<StoreCleanup, FileError>> {
  const dir = imagesDir(stateDir);
  const listed = await listDirectory(dir);
  if (!listed.ok) return listed;
  try {
    await chmod(dir, 0o700);
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code !== 'ENOENT')
      return { ok: false, error: ioError('chmod', dir, cause) };
  }
  const removed: string[] = [];
  const present = new Map<string, number>();
  for (const entry of listed.value) {
    const file = path.join(dir, entry);
    try {
      if (isTemporaryFileName(entry)) {
        await rm(file, { force: true });
        removed.push(`removed leftover ${entry}`);
        continue;
      }
      if (!DIGEST.test(entry)) continue;
      if (!referenced.has(entry)) {
        await rm(file, { force: true });
        removed.push(`removed image ${entry}, which nothing refers to`);
        continue;
      }
      const st = await lstat(file);
      if (!st.isFile()) continue;
      present.set(entry, st.size);
      if ((st.mode & 0o777) !== IMAGE_MODE) await chmod(file, IMAGE_MODE);
    } catch (cause) {
      return { ok: false, error: ioError('clean', file, cause) };
    }
  }
  if (removed.length > 0) {
    try {
      await fsyncDir(dir);
    } catch (cause) {
      return { ok: false, error: ioError('fsync', dir, cause) };
    }
  }
  const missing: { digest: string; reason: string }[] = [];
  for (const [digest, size] of referenced) {
    const found = present.get(digest);
    if (found === undefined) missing.push({ digest, reason: `image ${digest} is missing from the store` });
    else if (found !== size)
      missing.push({ digest, reason: `image ${digest} in the store has ${found} bytes, not ${size}` });
  }
  return ok({ removed, missing });
}

/**
 * `<run-dir>/<name>.img`, a symbolic link to the stored image the unikernel runs (the run and
 * state directories are often on different file systems; a link costs nothing and shows in the
 * tender's command line which unikernel it is). Undo removes the link.
 */
export async function linkImage(
  runDir: string,
  stateDir: string,
  name: Name,
  digest: string,
  installed?: string,
): Promise<Result<Undoable<string>, FileError>> {
  const link = imagePath(runDir, name);
  if (!link.ok) return link;
  const target = installed ?? storedImagePath(stateDir, digest);
  try {
    await unlinkIfPresent(link.value);
    await symlink(target, link.value);
  } catch (cause) {
    return { ok: false, error: ioError('symlink', link.value, cause) };
  }
  const file = link.value;
  return ok({ value: file, undo: () => unlinkIfPresent(file) });
}
