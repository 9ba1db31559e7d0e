// zlib (RFC 1950) over streams of chunks, with backpressure: at most a few slices of input and
// their output are in memory at once, whatever the size of what flows through (images, block
// devices), and a consumer that stops early stops the producer too.

import { Readable } from 'node:stream';
import { createDeflate, createInflate } from 'node:zlib';

/** Input is fed to zlib in slices of this size: each is one round trip to the thread pool, and
 * its output (up to ~1000× for a zlib bomb) is what piles up before the consumer runs. */
const SLICE = 64 * 1024;

async function* sliced(chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  for await (const chunk of chunks) {
    for (let at = 0; at < chunk.length; at += SLICE) yield chunk.subarray(at, at + SLICE);
  }
}

/** Thrown when the output grows beyond `maxBytes`. */
export class OutputLimitError extends Error {
  readonly limit: number;
  constructor(limit: number) {
    super(`output exceeds ${limit} bytes`);
    this.limit = limit;
  }
}

async function* through(
  transform: ReturnType<typeof createInflate>,
  chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  maxBytes: number,
): AsyncGenerator<Uint8Array> {
  const source = Readable.from(sliced(chunks), { highWaterMark: 1 });
  source.once('error', (cause) => transform.destroy(cause));
  source.pipe(transform);
  let total = 0;
  try {
    for await (const piece of transform as AsyncIterable<Buffer>) {
      total += piece.length;
      if (total > maxBytes) throw new OutputLimitError(maxBytes);
      yield piece;
    }
  } finally {
    source.destroy();
    transform.destroy();
  }
}

/** The zlib inflation of `chunks`; zlib's errors (`incorrect header check`, …) are thrown. */
export function inflateChunks(
  chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  maxBytes = Number.POSITIVE_INFINITY,
): AsyncGenerator<Uint8Array> {
  return through(createInflate(), chunks, maxBytes);
}

/** `chunks` deflated at `level` (1–9) as one zlib stream. */
export function deflateChunks(
  chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  level: number,
): AsyncGenerator<Uint8Array> {
  return through(createDeflate({ level }), chunks, Number.POSITIVE_INFINITY);
}
