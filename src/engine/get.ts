// get (semantics §5.2) from the image store: the image is read twice, once to check its digest
// (and, deflated at the level asked, to learn the reply's length, which the reply's head states
// before any image byte) and once as it is sent, so it is never in memory whole.

import { createHash, type Hash } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import { TransferCollector } from '../host/garbage.js';
import { type ImageRef, readImageFrom } from '../host/images.js';
import { deflateChunks } from '../host/zstream.js';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import { type Name, printName } from '../resources/name.js';
import type { EngineContext } from './context.js';
import { type EngineResponse, failure, invalidLevel, TEXT } from './replies.js';

export interface ImageReply {
  /** Deflated (zlib) when a level above 0 was asked, whatever form the client created it in. */
  readonly compressed: boolean;
  readonly length: number;
  /** The reply's image; iterating it to the end, or stopping early, closes the file. */
  readonly chunks: AsyncIterable<Uint8Array>;
}

/**
 * The reply to a get of the image open at `handle` (which this takes over: it is closed when the
 * chunks are done, or at once on a failure). A digest other than the image's is E_IMAGE_CORRUPT.
 */
export async function imageReply(
  handle: FileHandle,
  image: ImageRef,
  level: number,
): Promise<Result<ImageReply, PetrelError>> {
  const garbage = new TransferCollector();
  const read = (check: Hash | null) =>
    (async function* () {
      for await (const piece of readImageFrom(handle)) {
        check?.update(piece);
        garbage.moved(piece.length);
        yield piece;
      }
    })();
  const form = (check: Hash | null) => (level > 0 ? deflateChunks(read(check), level) : read(check));
  try {
    const check = createHash('sha256');
    let length = 0;
    for await (const piece of form(check)) length += piece.length;
    const actual = check.digest('hex');
    if (actual !== image.digest) {
      await handle.close();
      return err(
        'E_IMAGE_CORRUPT',
        `image ${image.digest} in the store is damaged (its SHA-256 is now ${actual})`,
        {
          digest: image.digest,
        },
      );
    }
    const chunks = (async function* () {
      try {
        yield* form(null);
      } finally {
        await handle.close();
      }
    })();
    return ok({ compressed: level > 0, length, chunks });
  } catch (cause) {
    await handle.close();
    return err('E_HOST_IO', `reading the image failed: ${String(cause)}`);
  }
}

/** What a get reads of the engine: it changes nothing, so it needs no step. */
export type GetContext = Pick<EngineContext, 'host' | 'log' | 'running'>;

/**
 * get (semantics §5.2) from the store, outside the queue; the file is opened inside it (`inQueue`
 * runs a read there, with no sweep after it), so a destroy that follows cannot take it away. A
 * level above 0 is honoured also for an image sent compressed (Albatross would return the
 * client's own bytes).
 */
export async function getResponse(
  ctx: GetContext,
  inQueue: <R>(task: () => Promise<R>) => Promise<R>,
  name: Name,
  level: number,
): Promise<EngineResponse> {
  if (!Number.isInteger(level) || level < 0 || level > 9) return failure(invalidLevel(level));
  const found = await inQueue(async () => {
    const run = ctx.running.get(printName(name));
    if (run === undefined) return null;
    return { image: run.vm.image, opened: await ctx.host.openImage(run.vm.image) };
  });
  if (found === null) return failure(TEXT.getNotFound);
  const replied = found.opened.ok ? await imageReply(found.opened.value, found.image, level) : found.opened;
  if (!replied.ok) {
    ctx.log.error({ name: printName(name), problem: replied.error.message }, 'get: image unreadable');
    return failure(`get: ${replied.error.message}`);
  }
  return { kind: 'image', ...replied.value };
}
