// The content of block device files: replaced from a stream (block set, add/set-OLD) through a
// temporary file renamed over the device, so a failed upload leaves the old content intact, and
// read back in 4096-byte pieces (block dump), zlib-deflated on request.

import { createReadStream } from 'node:fs';
import { open, rename } from 'node:fs/promises';
import path from 'node:path';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import type { Name } from '../resources/name.js';
import { writeFault } from './faults.js';
import { fsyncDir, unlinkIfPresent } from './files.js';
import { blockPath } from './paths.js';
import { deflateChunks, inflateChunks } from './zstream.js';

const MIB = 1024 * 1024;
/** Albatross reads block devices 4096 bytes at a time for a dump. */
export const DUMP_PIECE = 4096;

export type BlockDataError = PetrelError<
  'E_BLOCK_STREAM_SIZE' | 'E_BLOCK_WRITE' | 'E_BLOCK_READ_STREAM' | 'E_BLOCK_OPEN' | 'E_HOST_PATH'
>;

/**
 * Writes `chunks` (zlib-inflated when `compressed`) as the new content of the block device
 * `name` of `sizeMiB` MiB: more than the size is refused (`stream exceeds size`), less is
 * zero-extended. The device file is replaced atomically only when everything arrived.
 */
export async function replaceBlockData(
  stateDir: string,
  name: Name,
  sizeMiB: number,
  chunks: AsyncIterable<Uint8Array>,
  compressed: boolean,
  tooLarge = 'stream exceeds size',
): Promise<Result<void, BlockDataError>> {
  const file = blockPath(stateDir, name);
  if (!file.ok) return file;
  const temp = path.join(path.dirname(file.value), `~set.${process.pid}.${Date.now()}`);
  const limit = sizeMiB * MIB;
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(temp, 'wx', 0o600);
  } catch {
    return err('E_BLOCK_OPEN', 'error opening block device', { path: file.value });
  }
  let written = 0;
  try {
    const source = (compressed ? inflateChunks(chunks) : chunks)[Symbol.asyncIterator]();
    for (;;) {
      let next: IteratorResult<Uint8Array>;
      try {
        next = await source.next();
      } catch (cause) {
        return err('E_BLOCK_READ_STREAM', 'error while reading stream', { cause: String(cause) });
      }
      if (next.done === true) break;
      written += next.value.length;
      if (written > limit) {
        await source.return?.(undefined);
        return err('E_BLOCK_STREAM_SIZE', tooLarge, { limit, written });
      }
      const fault = writeFault('block-data', temp);
      if (fault !== null) throw fault;
      await handle.write(next.value);
    }
    await handle.truncate(limit);
    await handle.sync();
    await handle.close();
    await rename(temp, file.value);
    await fsyncDir(path.dirname(file.value));
    return ok(undefined);
  } catch (cause) {
    // Albatross' text, with the errno when the disk or quota is full: the user's fix.
    const code = (cause as NodeJS.ErrnoException).code;
    const full = code === 'ENOSPC' || code === 'EDQUOT';
    return err('E_BLOCK_WRITE', `error writing to file descriptor${full ? ` (${code})` : ''}`, {
      cause: String(cause),
    });
  } finally {
    await handle.close().catch(() => undefined);
    await unlinkIfPresent(temp).catch(() => undefined);
  }
}

/** The content of a block device in 4096-byte pieces, deflated at `level` when level > 0. */
export async function* readBlockData(
  stateDir: string,
  name: Name,
  level: number,
): AsyncGenerator<Uint8Array> {
  const file = blockPath(stateDir, name);
  if (!file.ok) throw file.error;
  const source = createReadStream(file.value, { highWaterMark: DUMP_PIECE });
  if (level === 0) {
    for await (const piece of source) yield piece as Buffer;
    return;
  }
  yield* deflateChunks(source as AsyncIterable<Buffer>, level);
}
