// Framing (albatross-wire.md §1): a signed 32-bit big-endian length, then that many bytes; a length
// ≤ 0 ends a stream. The same frames carry DER messages and raw image/block chunks.

import { type WireError, type WireResult, wireError } from './errors.js';

/** Default cap on one frame's payload (petrel-differences.md (c), `maxFrameBytes`). */
export const DEFAULT_MAX_FRAME = 64 * 1024 * 1024;

/** The zero-length frame that ends a chunk stream. */
export const END_OF_STREAM: Uint8Array = new Uint8Array(4);

export function frameHeader(length: number): Uint8Array {
  const out = new Uint8Array(4);
  new DataView(out.buffer).setInt32(0, length);
  return out;
}

/** One frame as a single buffer (a copy; use `frameHeader` + the payload to write without one). */
export function frame(payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(4 + payload.length);
  new DataView(out.buffer).setInt32(0, payload.length);
  out.set(payload, 4);
  return out;
}

/** Raw chunk frames for `data`, at most `chunkSize` bytes each, ended by END_OF_STREAM. */
export function chunkFrames(data: Uint8Array, chunkSize = 64 * 1024): Uint8Array[] {
  const frames: Uint8Array[] = [];
  for (let at = 0; at < data.length; at += chunkSize) frames.push(frame(data.subarray(at, at + chunkSize)));
  frames.push(END_OF_STREAM);
  return frames;
}

export type FrameEvent =
  /** A complete payload: a DER message or a raw chunk, as the protocol state dictates. */
  | { readonly kind: 'frame'; readonly payload: Uint8Array; readonly offset: number }
  /** A length ≤ 0: end of stream. */
  | { readonly kind: 'end'; readonly length: number; readonly offset: number };

export interface FrameReaderOptions {
  /** Largest payload accepted; a bigger length prefix fails before anything is allocated. Default 64 MiB. */
  readonly maxFrame?: number;
}

/** Pieces smaller than this are copied into a staging buffer instead of being held by reference. */
const SMALL_PIECE = 16 * 1024;
const STAGE_SIZE = 64 * 1024;
/**
 * A frame announcing at most this many bytes gets its buffer when its first bytes arrive and
 * every piece is copied into it: one allocation and one copy (raw chunks of images and block
 * data are such frames, by the tens of thousands). Larger ones hold what arrived until complete.
 */
const WHOLE_BELOW = 1024 * 1024;

/**
 * The payload of one frame while it arrives: a small frame is copied into its own buffer as it
 * comes; for a large one, large pieces are kept by reference and small ones copied into staging
 * buffers, so it is copied once when complete (or not at all when one piece holds it) and the
 * bookkeeping stays small even when the peer sends single bytes.
 */
class Assembly {
  readonly need: number;
  received = 0;
  readonly #whole: Uint8Array | null;
  readonly #parts: Uint8Array[] = [];
  #stage: Uint8Array | null = null;
  #stageFill = 0;

  constructor(need: number) {
    this.need = need;
    this.#whole = need <= WHOLE_BELOW ? new Uint8Array(need) : null;
  }

  add(piece: Uint8Array): void {
    if (this.#whole !== null) {
      this.#whole.set(piece, this.received);
    } else if (piece.length >= SMALL_PIECE) {
      this.#flush();
      this.#parts.push(piece);
    } else {
      if (this.#stage === null || this.#stageFill + piece.length > this.#stage.length) {
        this.#flush();
        this.#stage = new Uint8Array(Math.min(STAGE_SIZE, this.need - this.received));
      }
      this.#stage.set(piece, this.#stageFill);
      this.#stageFill += piece.length;
    }
    this.received += piece.length;
  }

  #flush(): void {
    if (this.#stage !== null && this.#stageFill > 0)
      this.#parts.push(this.#stage.subarray(0, this.#stageFill));
    this.#stage = null;
    this.#stageFill = 0;
  }

  payload(): Uint8Array {
    if (this.#whole !== null) return this.#whole;
    this.#flush();
    if (this.#parts.length === 1) return this.#parts[0] as Uint8Array;
    const out = new Uint8Array(this.need);
    let at = 0;
    for (const part of this.#parts) {
      out.set(part, at);
      at += part.length;
    }
    return out;
  }
}

/**
 * Turns stream chunks cut at arbitrary boundaries into frames. Memory held is bounded by what
 * actually arrived, never by the announced length (beyond 1 MiB: a smaller frame gets its whole
 * buffer when its first bytes arrive). A frame is returned as a view of the pushed
 * chunk when one chunk holds it (no copy), so callers must not reuse a chunk's memory after
 * pushing it. After an error the reader stays failed.
 */
export class FrameReader {
  readonly #max: number;
  readonly #head = new Uint8Array(4);
  #headFill = 0;
  /** The frame being assembled, or null while reading a length prefix. */
  #body: Assembly | null = null;
  /** The length of a frame whose prefix arrived without any of its payload. */
  #awaiting: number | null = null;
  /** Stream offset of the first byte of the current chunk, and of the frame in progress. */
  #consumed = 0;
  #frameStart = 0;
  #failed: WireError | null = null;

  constructor(options: FrameReaderOptions = {}) {
    this.#max = options.maxFrame ?? DEFAULT_MAX_FRAME;
  }

  /** Bytes of an incomplete frame held right now (a closed stream with pending > 0 was cut short). */
  get pending(): number {
    if (this.#awaiting !== null) return 4;
    return this.#body === null ? this.#headFill : 4 + this.#body.received;
  }

  push(chunk: Uint8Array): WireResult<FrameEvent[]> {
    if (this.#failed !== null) return { ok: false, error: this.#failed };
    const events: FrameEvent[] = [];
    const n = chunk.length;
    let p = 0;
    while (p < n) {
      if (this.#body === null) {
        let length: number;
        if (this.#awaiting !== null) {
          length = this.#awaiting;
          this.#awaiting = null;
        } else {
          if (this.#headFill === 0 && n - p >= 4) {
            this.#frameStart = this.#consumed + p;
            length = readInt32(chunk, p);
            p += 4;
          } else {
            if (this.#headFill === 0) this.#frameStart = this.#consumed + p;
            while (this.#headFill < 4 && p < n) this.#head[this.#headFill++] = chunk[p++] as number;
            if (this.#headFill < 4) break;
            this.#headFill = 0;
            length = readInt32(this.#head, 0);
          }
          if (length <= 0) {
            events.push({ kind: 'end', length, offset: this.#frameStart });
            continue;
          }
          if (length > this.#max) {
            const what = `frame length ${length} exceeds the limit of ${this.#max} bytes`;
            const details = { length, limit: this.#max };
            this.#failed = wireError('E_WIRE_FRAME_TOO_LARGE', what, this.#frameStart, details);
            return { ok: false, error: this.#failed };
          }
        }
        if (n - p >= length) {
          events.push({ kind: 'frame', payload: chunk.subarray(p, p + length), offset: this.#frameStart });
          p += length;
          continue;
        }
        // A length prefix written on its own, its payload to follow (a chunk forwarded as it
        // came): wait for the payload before deciding whether it needs assembling.
        if (p === n) {
          this.#awaiting = length;
          break;
        }
        this.#body = new Assembly(length);
      }
      const body = this.#body;
      const take = Math.min(body.need - body.received, n - p);
      body.add(chunk.subarray(p, p + take));
      p += take;
      if (body.received < body.need) break;
      events.push({ kind: 'frame', payload: body.payload(), offset: this.#frameStart });
      this.#body = null;
    }
    this.#consumed += n;
    return { ok: true, value: events };
  }
}

function readInt32(bytes: Uint8Array, at: number): number {
  return (
    ((bytes[at] as number) << 24) |
    ((bytes[at + 1] as number) << 16) |
    ((bytes[at + 2] as number) << 8) |
    (bytes[at + 3] as number)
  );
}

/**
 * Splits a complete buffer (a file of captured frames) into frames. Unlike a socket, a file that
 * ends inside a frame is an error, with the offset of that frame.
 */
export function splitFrames(bytes: Uint8Array, options: FrameReaderOptions = {}): WireResult<FrameEvent[]> {
  const reader = new FrameReader(options);
  const events = reader.push(bytes);
  if (!events.ok) return events;
  if (reader.pending > 0) {
    const start = bytes.length - reader.pending;
    return {
      ok: false,
      error: wireError('E_WIRE_FRAME_TRUNCATED', 'frame cut short by the end of the input', start),
    };
  }
  return events;
}

/**
 * Frames from an async byte source (a socket, a file stream). Yields events until the source ends
 * or a frame is refused; a refused frame is yielded as `{ kind: 'error' }` and ends the iteration.
 */
export async function* readFrames(
  source: AsyncIterable<Uint8Array>,
  options: FrameReaderOptions = {},
): AsyncGenerator<FrameEvent | { readonly kind: 'error'; readonly error: WireError }> {
  const reader = new FrameReader(options);
  for await (const chunk of source) {
    const events = reader.push(chunk);
    if (!events.ok) {
      yield { kind: 'error', error: events.error };
      return;
    }
    yield* events.value;
  }
}
