// A socket as a Duplex whose every read is reported before it is handed on, and whose reading
// the admission gate can stop: what TLS runs over while the peer is not yet authenticated.

import type { Socket } from 'node:net';
import { Duplex } from 'node:stream';

export class MeteredStream extends Duplex {
  readonly #raw: Socket;
  #held = false;

  /** `first`: bytes already read from `raw` (its ClientHello), handed on first. */
  constructor(raw: Socket, first: readonly Buffer[], onRead: () => void) {
    super({ allowHalfOpen: false });
    this.#raw = raw;
    for (const chunk of first) this.push(chunk);
    raw.on('data', (chunk: Buffer) => {
      onRead();
      if (!this.push(chunk)) raw.pause();
    });
    raw.once('end', () => this.push(null));
    raw.once('close', () => this.destroy());
    raw.on('error', (e) => this.destroy(e));
  }

  /** Stops reading the socket until `release`. */
  hold(): void {
    this.#held = true;
    this.#raw.pause();
  }

  release(): void {
    this.#held = false;
    this.#raw.resume();
  }

  override _read(): void {
    if (!this.#held) this.#raw.resume();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.#raw.write(chunk, callback);
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.#raw.end();
    callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.#raw.destroy();
    callback(error);
  }
}
