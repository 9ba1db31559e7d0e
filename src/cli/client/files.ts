// Local files of the client: images and block contents read in pieces, dumps written as they
// arrive, and zlib on the way. Failures stop with exit 124.

import { createDeflate, createInflate } from 'node:zlib';
import type { CliIo } from '../command.js';
import { CLIENT_EXIT, Stop } from './shell.js';

const describe = (e: unknown): string => (e instanceof Error ? e.message : String(e));

export async function readWhole(io: CliIo, path: string): Promise<Uint8Array> {
  try {
    return await io.readFile(path);
  } catch (e) {
    throw new Stop(CLIENT_EXIT.LOCAL, `cannot read ${path}: ${describe(e)}`);
  }
}

/** A file as pieces with its size when known; without `openRead`, the whole file in one piece. */
export async function readPieces(
  io: CliIo,
  path: string,
): Promise<{ readonly size: number | null; readonly chunks: AsyncIterable<Uint8Array> }> {
  if (io.openRead === undefined) {
    const data = await readWhole(io, path);
    return {
      size: data.length,
      chunks: (async function* () {
        yield data;
      })(),
    };
  }
  let opened: Awaited<ReturnType<typeof io.openRead>>;
  try {
    opened = await io.openRead(path);
  } catch (e) {
    throw new Stop(CLIENT_EXIT.LOCAL, `cannot read ${path}: ${describe(e)}`);
  }
  const { chunks } = opened;
  return {
    size: opened.size,
    chunks: (async function* () {
      try {
        yield* chunks;
      } catch (e) {
        throw new Stop(CLIENT_EXIT.LOCAL, `cannot read ${path}: ${describe(e)}`);
      }
    })(),
  };
}

/** Pieces to `path`, or to standard output when `path` is undefined. */
export async function writePieces(
  io: CliIo,
  path: string | undefined,
  chunks: AsyncIterable<Uint8Array>,
): Promise<void> {
  if (path === undefined) {
    for await (const chunk of chunks) io.stdout(chunk);
    return;
  }
  try {
    if (io.writeChunks !== undefined) return await io.writeChunks(path, chunks);
    const pieces: Uint8Array[] = [];
    for await (const chunk of chunks) pieces.push(chunk);
    await io.writeFile(path, Buffer.concat(pieces));
  } catch (e) {
    if (e instanceof Stop) throw e;
    throw new Stop(CLIENT_EXIT.LOCAL, `cannot write ${path}: ${describe(e)}`);
  }
}

/**
 * One zlib stream (RFC 1950) over the pieces: deflated at level 9 (what we send), or inflated
 * (what petreld sent: a failure there is a protocol error). A Stop from the source goes through.
 */
export async function* zlib(
  chunks: AsyncIterable<Uint8Array>,
  how: 'deflate' | 'inflate',
): AsyncGenerator<Uint8Array> {
  const stream = how === 'deflate' ? createDeflate({ level: 9 }) : createInflate();
  let sourceError: unknown = null;
  const feed = (async () => {
    try {
      for await (const chunk of chunks) {
        if (!stream.write(chunk)) await new Promise((resolve) => stream.once('drain', resolve));
      }
      stream.end();
    } catch (e) {
      sourceError = e;
      stream.destroy(e instanceof Error ? e : new Error(String(e)));
    }
  })();
  try {
    for await (const piece of stream) yield piece as Buffer;
  } catch (e) {
    if (sourceError instanceof Stop) throw sourceError;
    if (how === 'deflate') throw new Stop(CLIENT_EXIT.LOCAL, `compressing failed: ${describe(e)}`);
    throw new Stop(CLIENT_EXIT.PROTOCOL, `petreld's data does not decompress: ${describe(e)}`);
  } finally {
    stream.destroy();
    await feed;
  }
}
