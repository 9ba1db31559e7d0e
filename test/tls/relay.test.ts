// A get through the TLS endpoint (src/tls/proxy.ts relayImage): the image is relayed as the
// daemon sends it, under the final header, byte for byte what the whole reply would have been;
// a reply that is not an image is answered as before; a daemon or a client that stops in the
// middle cuts the client off instead of sending a frame that lies.
import { describe, expect, it } from 'vitest';
import { unwrap } from '../../src/resources/errors.js';
import { parseName } from '../../src/resources/name.js';
import type { Channel, Incoming } from '../../src/tls/channel.js';
import type { Identity } from '../../src/tls/identity.js';
import { finalFrame, proxy } from '../../src/tls/proxy.js';
import { decodeWire, encodeWire, frame } from '../../src/wire/index.js';
import type { Payload } from '../../src/wire/types.js';

const name = (text: string) => unwrap(parseName(text));
const identity: Identity = {
  name: name(':alice:web'),
  policies: [],
  command: { type: 'unikernel-get', level: 0 },
};

/** The daemon's side: hands out `pieces` in order; frames until raw() is called. */
class Daemon implements Channel {
  readonly writes: Uint8Array[] = [];
  rawAt: number | null = null;
  readonly closed = new Promise<void>(() => {});
  readonly #pieces: Uint8Array[];
  constructor(pieces: Uint8Array[]) {
    this.#pieces = pieces;
  }
  next(): Promise<Incoming> {
    if (this.rawAt === null) throw new Error('the reply to a get is asked for before raw()');
    const piece = this.#pieces.shift();
    return Promise.resolve(piece === undefined ? { kind: 'closed' } : { kind: 'frame', payload: piece });
  }
  raw(): void {
    this.rawAt = this.writes.length;
  }
  /** Pieces not taken yet. */
  get remaining(): number {
    return this.#pieces.length;
  }
  write(bytes: Uint8Array): Promise<boolean> {
    this.writes.push(bytes);
    return Promise.resolve(true);
  }
  end(): void {}
  destroy(): void {}
}

/** The TLS client's side: keeps what is written; writes fail from the `failAt`-th on. */
class Client implements Channel {
  readonly writes: Uint8Array[] = [];
  ended = false;
  destroyed = false;
  readonly closed = new Promise<void>(() => {});
  constructor(readonly failAt = Number.POSITIVE_INFINITY) {}
  next(): Promise<Incoming> {
    return Promise.resolve({ kind: 'closed' });
  }
  raw(): void {}
  write(bytes: Uint8Array): Promise<boolean> {
    this.writes.push(Uint8Array.from(bytes));
    return Promise.resolve(this.writes.length < this.failAt);
  }
  end(): void {
    this.ended = true;
  }
  destroy(): void {
    this.destroyed = true;
  }
  received(): Buffer {
    return Buffer.concat(this.writes);
  }
}

/** What the daemon sends for `payload` (its own header), cut into pieces of the given sizes. */
function daemonReply(payload: Payload, sizes: readonly number[]): Uint8Array[] {
  const header = { version: 5 as const, sequence: 17n, name: identity.name };
  const bytes = frame(unwrap(encodeWire({ header, payload })));
  const pieces: Uint8Array[] = [];
  let at = 0;
  for (let i = 0; at < bytes.length; i++) {
    const size = sizes[Math.min(i, sizes.length - 1)] as number;
    pieces.push(bytes.subarray(at, at + size));
    at += size;
  }
  return pieces;
}

const image = Uint8Array.from({ length: 200_000 }, (_, i) => (i * 7) & 0xff);
const imagePayload = (compressed: boolean): Payload => ({
  kind: 'reply',
  reply: { type: 'unikernel-image', compressed, image },
});

async function run(pieces: Uint8Array[], client = new Client()) {
  const daemon = new Daemon(pieces);
  const outcome = await proxy({
    identity,
    client,
    connect: () => Promise.resolve(daemon),
    sequence: () => 1n,
    maxFrameBytes: 1 << 20,
  });
  return { outcome, daemon, client };
}

describe('a get through the TLS endpoint', () => {
  it('relays the image under the final header: the same bytes as the whole reply, in pieces', async () => {
    for (const compressed of [false, true]) {
      for (const sizes of [[1, 2, 3, 5, 8, 4096], [3, 1, 7, 65_536], [1 << 20]]) {
        const pieces = daemonReply(imagePayload(compressed), sizes);
        const largest = Math.max(...pieces.map((p) => p.length));
        const { outcome, daemon, client } = await run(pieces);
        expect(outcome).toEqual({ kind: 'replied', failure: null });
        expect(daemon.rawAt, 'raw before the command is written').toBe(0);
        expect(client.received().equals(Buffer.from(finalFrame(identity, imagePayload(compressed))))).toBe(
          true,
        );
        expect(client.ended).toBe(true);
        // The image went on as it came: no write larger than what the daemon sent at once.
        expect(Math.max(...client.writes.slice(1).map((w) => w.length))).toBeLessThanOrEqual(largest);
      }
    }
  });

  it('answers a reply that is not an image as any other, under the final header', async () => {
    const refusal: Payload = { kind: 'failure', message: 'no unikernel with this name' };
    const { outcome, client } = await run(daemonReply(refusal, [5, 3]));
    expect(outcome).toEqual({ kind: 'replied', failure: 'no unikernel with this name' });
    expect(client.received().equals(Buffer.from(finalFrame(identity, refusal)))).toBe(true);
  });

  it('cuts the client off when the daemon stops inside the image, and says why', async () => {
    const pieces = daemonReply(imagePayload(false), [4096]);
    const { outcome, client } = await run(pieces.slice(0, 10));
    expect(outcome).toEqual({ kind: 'gone', failure: 'the image was cut short by the daemon' });
    expect(client.destroyed).toBe(true);
    expect(client.ended).toBe(false);
    // What was sent announces the whole image, so the client can tell it was cut short.
    const sent = client.received();
    const announced = sent.readInt32BE(0);
    expect(sent.length - 4).toBeLessThan(announced);
  });

  it('stops reading from the daemon once the client has gone', async () => {
    const pieces = daemonReply(imagePayload(false), [4096]);
    const { outcome, daemon, client } = await run(pieces, new Client(3));
    expect(outcome).toEqual({ kind: 'gone', failure: null });
    expect(client.destroyed).toBe(true);
    expect(client.writes).toHaveLength(3);
    expect(daemon.remaining).toBeGreaterThan(40);
  });

  it('refuses a daemon reply that announces more than the frame limit, reading no further', async () => {
    const huge = new Uint8Array([0x7f, 0xff, 0xff, 0xff, 0x30]);
    const { outcome, client } = await run([huge]);
    expect(outcome).toEqual({ kind: 'replied', failure: 'error reading from fd' });
    const reply = unwrap(decodeWire(client.received().subarray(4)));
    expect(reply.payload).toEqual({ kind: 'failure', message: 'error reading from fd' });
  });
});
