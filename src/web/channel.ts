// An HTTP request as the client side of the TLS endpoint's proxy (src/tls/proxy.ts): its body,
// if any, is the stream of raw chunks a create forwards, and the frames the proxy writes back
// are kept (the final one is the answer). So a web request reaches petreld by the very frames
// and checks a mutual-TLS session does.

import type { Channel, Incoming } from '../tls/channel.js';
import { tlsError } from '../tls/errors.js';

export class RequestChannel implements Channel {
  readonly #body: AsyncIterator<Buffer> | null;
  readonly #onFrame: ((payload: Uint8Array) => Promise<boolean>) | undefined;
  readonly #stallMs: number | undefined;
  readonly closed: Promise<void>;
  #last: Uint8Array | null = null;

  /**
   * `body`: the request's chunks (null: a request without one); `closed`: when the client has
   * gone; `onFrame`: hears every frame written (a subscription's events), false when it can
   * take no more; `stallMs`: a body begun must not pause longer (frameStallTimeout, as a TLS
   * client's frame), or it is refused and nothing it carried is kept.
   */
  constructor(
    body: AsyncIterable<Buffer> | null,
    closed: Promise<void>,
    onFrame?: (payload: Uint8Array) => Promise<boolean>,
    stallMs?: number,
  ) {
    this.#body = body === null ? null : body[Symbol.asyncIterator]();
    this.closed = closed;
    this.#onFrame = onFrame;
    this.#stallMs = stallMs;
  }

  /** The payload of the last frame written: the final reply, once the proxy has returned. */
  get last(): Uint8Array | null {
    return this.#last;
  }

  async next(): Promise<Incoming> {
    if (this.#body === null) return { kind: 'closed' };
    const body = this.#body;
    for (;;) {
      try {
        const read = await this.#withinStall(body.next());
        if (read === null) {
          const ms = this.#stallMs as number;
          return {
            kind: 'refused',
            error: tlsError('E_TLS_FRAME_STALLED', `the body paused for ${ms} ms`, { ms }),
          };
        }
        if (read.done === true) return { kind: 'end' };
        // A zero-length chunk would read as the end of the stream on the daemon's side.
        if (read.value.length > 0) return { kind: 'frame', payload: read.value };
      } catch {
        // The client went away mid-body: the proxy sends no end, so nothing is created.
        return { kind: 'closed' };
      }
    }
  }

  /** `read`, or null once it has taken longer than the stall timeout. */
  #withinStall<T>(read: Promise<T>): Promise<T | null> {
    return this.#stallMs === undefined ? read : withinStall(read, this.#stallMs);
  }

  raw(): void {
    // Only a get reads raw bytes; the web API does not relay images yet.
  }

  /**
   * Each write the proxy makes is one frame: its length prefix, then its payload; except while a
   * get's image is relayed (`rawWrites`), when the first write is the reply's length and head
   * and the rest are pieces of the image, handed on as they are.
   */
  rawWrites = false;

  async write(bytes: Uint8Array): Promise<boolean> {
    const payload = this.rawWrites ? bytes : bytes.subarray(4);
    this.#last = payload;
    return this.#onFrame === undefined ? true : this.#onFrame(payload);
  }

  end(): void {}

  destroy(): void {}
}

/** `read`, or null once it has taken longer than `ms`. */
export function withinStall<T>(read: Promise<T>, ms: number): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), ms);
  });
  return Promise.race([read, late]).finally(() => clearTimeout(timer));
}
