// A connected pair of in-memory streams that behaves like the two ends of a unix socket: bytes
// written at one end are read at the other, ending or destroying one end ends the other, a write
// to an end whose peer is gone fails, a writer waits while its reader does not read, and an end
// closes once both directions are shut, read to the end or not. petreld serves the TLS endpoint
// it hosts through such pairs: the same socket handlers, no kernel trip.

import { Duplex } from 'node:stream';

class PairEnd extends Duplex {
  #peer: PairEnd | null = null;
  /** The peer's write waiting until this end's reader wants more. */
  #resume: ((error?: Error | null) => void) | null = null;
  /** The peer will write nothing more. */
  #inputEnded = false;

  constructor() {
    // Like a socket: once the peer ended, this end ends too.
    super({ allowHalfOpen: false });
    this.once('finish', () => this.#closeIfShut());
  }

  connect(peer: PairEnd): void {
    this.#peer = peer;
  }

  override _read(): void {
    const resume = this.#resume;
    this.#resume = null;
    resume?.();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    const peer = this.#peer;
    if (peer === null || peer.destroyed || peer.readableEnded) done(brokenPipe());
    else if (peer.push(chunk)) done();
    else peer.#resume = done;
  }

  override _final(done: (error?: Error | null) => void): void {
    if (this.#peer !== null) this.#peer.#end();
    done();
  }

  override _destroy(error: Error | null, done: (error?: Error | null) => void): void {
    if (this.#peer !== null) this.#peer.#end();
    const resume = this.#resume;
    this.#resume = null;
    resume?.(brokenPipe());
    done(error);
  }

  /**
   * The peer stopped writing (ended or went away): the end of this end's input. Once this end
   * has ended too, it closes, as a socket does, even if its reader stopped reading (a handler
   * that answered and ended never reads the end of the input; without this the end would stay
   * open, and referenced, for good).
   */
  #end(): void {
    this.#inputEnded = true;
    if (this.destroyed) return;
    if (!this.readableEnded) this.push(null);
    this.#closeIfShut();
  }

  /** Both directions shut: nothing more can pass, so the end closes. */
  #closeIfShut(): void {
    if (this.#inputEnded && this.writableFinished && !this.destroyed) this.destroy();
  }
}

function brokenPipe(): Error {
  return Object.assign(new Error('write EPIPE: the other end is closed'), { code: 'EPIPE' });
}

/** Two connected ends: what one writes the other reads. */
export function duplexPair(): [Duplex, Duplex] {
  const a = new PairEnd();
  const b = new PairEnd();
  a.connect(b);
  b.connect(a);
  return [a, b];
}
