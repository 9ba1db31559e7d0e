// Frames over a stream socket (the TLS client or a daemon's unix socket) as an async pull API,
// with the frame cap applied as bytes arrive and the socket paused while events pile up.

import type { Duplex } from 'node:stream';
import type { TransferMeter } from '../wire/exchange.js';
import { FrameReader } from '../wire/index.js';
import { type TlsError, tlsError } from './errors.js';

export type Incoming =
  /**
   * A complete payload: a DER message or a raw chunk, as the protocol state dictates; after
   * `raw()`, the bytes as they arrived, frame boundaries and length prefixes included.
   */
  | { readonly kind: 'frame'; readonly payload: Uint8Array }
  /** A zero-length (or negative) frame: the end of a chunk stream. */
  | { readonly kind: 'end' }
  /** The peer closed or the socket failed; a frame cut short is dropped. */
  | { readonly kind: 'closed' }
  /** A frame above the cap: nothing was allocated for it and the socket is already destroyed. */
  | { readonly kind: 'refused'; readonly error: TlsError };

/** What the proxy needs from a connection; tests implement it over recorded frames. */
export interface Channel {
  next(): Promise<Incoming>;
  /**
   * From now on, `next()` hands out the bytes as they arrive instead of frames: for a message
   * too large to hold (a get's image). Called between frames, before the message is asked for.
   */
  raw(): void;
  /** Resolves false when the bytes could not be written (the socket failed or closed). */
  write(bytes: Uint8Array): Promise<boolean>;
  /** Resolves once the socket has closed, for whatever reason. */
  readonly closed: Promise<void>;
  /** Flushes what was written, then closes. */
  end(): void;
  /** Closes at once. */
  destroy(): void;
}

/**
 * Events, and bytes of frames, queued before the socket is paused: bounds memory when the
 * consumer is slower. Both: 32 events of a get's 1 MiB pieces held 32 MiB for a slow TLS client
 * (seen: petreld 40 MB up during a 50 MB get on a loaded machine), 2 MiB of console lines are
 * thousands of events.
 */
const HIGH_WATER = 32;
const HIGH_WATER_BYTES = 2 * 1024 * 1024;

export class SocketChannel implements Channel {
  readonly #socket: Duplex;
  readonly #reader: FrameReader;
  readonly #queue: Incoming[] = [];
  /** Bytes of the frames in #queue. */
  #queuedBytes = 0;
  readonly #meter: TransferMeter | undefined;
  #waiter: ((event: Incoming) => void) | null = null;
  #finished = false;
  #raw = false;
  readonly #stallMs: number | undefined;
  #stall: NodeJS.Timeout | null = null;
  readonly #onRefused: ((error: TlsError) => void) | undefined;
  readonly closed: Promise<void>;

  /**
   * `onRefused` hears of an oversized or stalled frame once (for the log), before `next()`
   * reports it; `meter` of every byte read and written (a client's progress display);
   * `stallMs`: a frame begun must not pause longer (none when absent). Waiting between frames
   * is not stalling: a subscriber sends nothing for days.
   */
  constructor(
    socket: Duplex,
    maxFrameBytes: number,
    onRefused?: (error: TlsError) => void,
    meter?: TransferMeter,
    stallMs?: number,
  ) {
    this.#socket = socket;
    this.#meter = meter;
    this.#stallMs = stallMs;
    this.#onRefused = onRefused;
    this.#reader = new FrameReader({ maxFrame: maxFrameBytes });
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
    socket.on('data', (chunk: Buffer) => this.#data(chunk, onRefused));
    socket.once('end', () => this.#finish());
    socket.once('close', () => {
      this.#clearStall();
      this.#finish();
    });
    // Errors end the stream like a close; whoever owns the socket logs them.
    socket.on('error', () => this.#finish());
  }

  #data(chunk: Buffer, onRefused?: (error: TlsError) => void): void {
    if (this.#finished) return;
    this.#meter?.received(chunk.length);
    if (this.#raw) {
      this.#clearStall();
      this.#push({ kind: 'frame', payload: chunk });
      if (this.#full()) this.#socket.pause();
      return;
    }
    const events = this.#reader.push(chunk);
    if (!events.ok) {
      const error = tlsError('E_TLS_FRAME_TOO_LARGE', events.error.message, events.error.details);
      onRefused?.(error);
      this.#socket.destroy();
      this.#push({ kind: 'refused', error });
      this.#finished = true;
      return;
    }
    for (const event of events.value) {
      this.#push(event.kind === 'frame' ? { kind: 'frame', payload: event.payload } : { kind: 'end' });
    }
    this.#clearStall();
    if (this.#reader.pending > 0 && this.#stallMs !== undefined) {
      const ms = this.#stallMs;
      this.#stall = setTimeout(() => this.#stalled(ms), ms);
      this.#stall.unref();
    }
    if (this.#full()) this.#socket.pause();
  }

  #full(): boolean {
    return this.#queue.length >= HIGH_WATER || this.#queuedBytes >= HIGH_WATER_BYTES;
  }

  #clearStall(): void {
    if (this.#stall !== null) clearTimeout(this.#stall);
    this.#stall = null;
  }

  /** A frame began and then nothing came for `ms`: refused like an oversized one. */
  #stalled(ms: number): void {
    this.#stall = null;
    if (this.#finished) return;
    if (this.#queue.length > 0) {
      // Frames are waiting for our consumer, so we stopped reading: the pause is ours.
      this.#stall = setTimeout(() => this.#stalled(ms), ms);
      this.#stall.unref();
      return;
    }
    const error = tlsError('E_TLS_FRAME_STALLED', `a frame began and then paused for ${ms} ms`, {
      pending: this.#reader.pending,
    });
    this.#onRefused?.(error);
    this.#socket.destroy();
    this.#push({ kind: 'refused', error });
    this.#finished = true;
  }

  #finish(): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#push({ kind: 'closed' });
  }

  #push(event: Incoming): void {
    const waiter = this.#waiter;
    if (waiter !== null) {
      this.#waiter = null;
      waiter(event);
    } else {
      this.#queue.push(event);
      if (event.kind === 'frame') this.#queuedBytes += event.payload.length;
    }
  }

  next(): Promise<Incoming> {
    const event = this.#queue.shift();
    if (event?.kind === 'frame') this.#queuedBytes -= event.payload.length;
    if (this.#queue.length < HIGH_WATER / 2 && this.#queuedBytes < HIGH_WATER_BYTES / 2 && !this.#finished)
      this.#socket.resume();
    if (event !== undefined) {
      // The terminal event stays available to every later call.
      if (event.kind === 'closed' || event.kind === 'refused') this.#queue.unshift(event);
      return Promise.resolve(event);
    }
    return new Promise((resolve) => {
      this.#waiter = (e) => {
        if (e.kind === 'closed' || e.kind === 'refused') this.#queue.push(e);
        resolve(e);
      };
    });
  }

  raw(): void {
    // Bytes of a frame already begun would be lost to the caller: it asks between frames.
    if (
      this.#reader.pending > 0 ||
      this.#queue.some((event) => event.kind === 'frame' || event.kind === 'end')
    )
      throw new Error('raw() called inside a frame or with frames not yet taken');
    this.#raw = true;
  }

  write(bytes: Uint8Array): Promise<boolean> {
    if (this.#socket.destroyed || !this.#socket.writable) return Promise.resolve(false);
    return new Promise((resolve) => {
      this.#socket.write(bytes, (error) => {
        if (error == null) this.#meter?.sent(bytes.length);
        resolve(error == null);
      });
    });
  }

  end(): void {
    this.#socket.end();
  }

  destroy(): void {
    this.#socket.destroy();
  }
}
