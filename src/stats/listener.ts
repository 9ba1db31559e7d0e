// One `stats subscribe` connection with a bounded queue (petrel-differences.md (i)): frames wait
// here only while the socket drains; a listener whose queue is full is closed, so a client that
// stops reading costs at most `max` frames and never delays sampling or other listeners.

import type { Duplex } from 'node:stream';
import type { Wire } from '../wire/types.js';

/** The close reason of a listener that stopped reading ((i)): worth a warning, unlike the others. */
export const QUEUE_FULL = 'queue full';

export class Listener {
  readonly #socket: Duplex;
  readonly #send: (wire: Wire) => boolean;
  readonly #max: number;
  readonly #queue: Wire[] = [];
  #draining = false;
  #closed = false;
  readonly #onClose: (reason: string) => void;

  /**
   * `send` writes one frame and returns false when the socket wants to drain first (the frame is
   * written all the same). `onClose` runs once, whoever closes.
   */
  constructor(socket: Duplex, send: (wire: Wire) => boolean, max: number, onClose: (reason: string) => void) {
    this.#socket = socket;
    this.#send = send;
    this.#max = Math.max(1, max);
    this.#onClose = onClose;
    // The client went away, or the socket handler ended the connection: stop at once.
    socket.once('close', () => this.#closeQuietly('connection closed'));
    socket.once('end', () => this.#closeQuietly('client ended the connection'));
    socket.once('finish', () => this.#closeQuietly('connection ended'));
    socket.once('error', (e) => this.#closeQuietly(`socket error: ${e.message}`));
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Frames waiting for the socket to drain. */
  get queued(): number {
    return this.#queue.length;
  }

  /** Queues or writes one frame; false when the listener is (now) closed. */
  push(wire: Wire): boolean {
    if (this.#closed) return false;
    if (this.#draining) {
      if (this.#queue.length >= this.#max) {
        this.close(QUEUE_FULL, true);
        return false;
      }
      this.#queue.push(wire);
      return true;
    }
    return this.#write(wire);
  }

  /** Ends the connection: `destroy` drops what the socket still holds (a stuck client). */
  close(reason: string, destroy = false): void {
    if (this.#closed) return;
    this.#closeQuietly(reason);
    if (destroy) this.#socket.destroy();
    else this.#socket.end();
  }

  #write(wire: Wire): boolean {
    let flushed: boolean;
    try {
      flushed = this.#send(wire);
    } catch (cause) {
      this.close(`write failed: ${(cause as Error).message}`, true);
      return false;
    }
    if (!flushed) {
      this.#draining = true;
      this.#socket.once('drain', () => this.#flush());
    }
    return true;
  }

  #flush(): void {
    this.#draining = false;
    while (!this.#closed && !this.#draining) {
      const next = this.#queue.shift();
      if (next === undefined) return;
      this.#write(next);
    }
  }

  #closeQuietly(reason: string): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#queue.length = 0;
    this.#onClose(reason);
  }
}
