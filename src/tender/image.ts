// Turns an image as a configuration carries it into the bytes a tender runs: zlib-inflated
// when the configuration says `compressed` (semantics §5.3), with a cap on the inflated size.

import { createHash } from 'node:crypto';
import { inflate } from 'node:zlib';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';

/** Default cap on an inflated image: hvt guests have at most 4 GiB, images are far smaller. */
export const DEFAULT_MAX_IMAGE_BYTES = 1024 * 1024 * 1024;

export interface InflateOptions {
  /** Refuse images that inflate beyond this many bytes. Default 1 GiB. */
  readonly maxBytes?: number;
}

/**
 * The image itself when not compressed, else its zlib (RFC 1950) inflation; a failure is
 * Albatross' `failed to uncompress: <reason>`.
 */
export function inflateImage(
  image: Uint8Array,
  compressed: boolean,
  options: InflateOptions = {},
): Promise<Result<Buffer, PetrelError<'E_IMAGE_INFLATE'>>> {
  if (!compressed) return Promise.resolve(ok(Buffer.from(image.buffer, image.byteOffset, image.byteLength)));
  return new Promise((resolve) => {
    inflate(image, { maxOutputLength: options.maxBytes ?? DEFAULT_MAX_IMAGE_BYTES }, (error, result) => {
      if (error === null) resolve(ok(result));
      else
        resolve(
          err('E_IMAGE_INFLATE', `failed to uncompress: ${error.message}`, {
            zlibCode: (error as NodeJS.ErrnoException).code,
          }),
        );
    });
  });
}

/** SHA-256 of the inflated image (the digest unikernel info reports), lower-case hex. */
export function imageDigest(image: Uint8Array): string {
  return createHash('sha256').update(image).digest('hex');
}
