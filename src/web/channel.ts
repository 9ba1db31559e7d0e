// An HTTP request as the client side of the TLS endpoint's proxy (src/tls/proxy.ts): its body,
// if any, is the stream of raw chunks a create forwards, and the frames the proxy writes back
// are kept (the final one is the answer). So a web request reaches petreld by the very frames
// and checks a mutual-TLS session does.

import type { Channel, Incoming } from '../tls/channel.js';

export class RequestChannel implements Channel {
  readonly #body: AsyncIterator<Buffer> | null;
  readonly #onFrame: ((payload: Uint8Array) => Promise<boolean>) | undefined;
  readonly closed: Promise<void>;
  #last: Uint8Array | null = null;

  /**
   * `body`: the request's chunks (null: a request without one); `closed`: when the client has
   * gone; `onFrame`: hears every frame written (a subscription's events), false when it can
   * take no more.
   */
  constructor(
    body: AsyncIterable<Buffer> | null,
    closed: Promise<void>,
    onFrame?: (payload: Uint8Array) => Promise<boolean>,
  ) {
    this.#body = body === null ? null : body[Symbol.asyncIterator]();
    this.closed = closed;
    this.#onFrame = onFrame;
  }

  /** The payload of the last frame written: the final reply, once the proxy has returned. */
  get last(): Uint8Array | null {
    return this.#last;
  }

  async next(): Promise<Incoming> {
    if (this.#body === null) return { kind: 'closed' };
    for (;;) {
      try {
        const read = await this.#body.next();
        if (read.done === true) return { kind: 'end' };
        // A zero-length chunk would read as the end of the stream on the daemon's side.
        if (read.value.length > 0) return { kind: 'frame', payload: read.value };
      } catch {
        // The client went away mid-body: the proxy sends no end, so nothing is created.
        return { kind: 'closed' };
      }
    }
  }

  raw(): void {
    // Only a get reads raw bytes; the web API does not relay images yet.
  }

  /** Each write the proxy makes is one frame: its length prefix, then its payload. */
  async write(bytes: Uint8Array): Promise<boolean> {
    const payload = bytes.subarray(4);
    this.#last = payload;
    return this.#onFrame === undefined ? true : this.#onFrame(payload);
  }

  end(): void {}

  destroy(): void {}
}
