// One authorized request carried from the TLS client to the daemon and its reply carried back
// (semantics §14.3): chain policies (deepest first), the command, then the raw chunks of a
// streamed image or of block data, then the reply in the mode the command calls for, with
// headers rewritten as Albatross does. A streamed image is forwarded chunk by chunk, never
// joined (petrel-differences.md (j)): the engine stores it as it arrives. A get's image is
// relayed to the client as it arrives too, never held whole.

import { pathName, printName } from '../resources/name.js';
import {
  decodeWire,
  END_OF_STREAM,
  encodeWire,
  frame,
  frameHeader,
  type ImageReplyHead,
  imageReplyHead,
  readImageReplyHead,
  WIRE_VERSION,
} from '../wire/index.js';
import type { Command, Header, Payload, Wire } from '../wire/types.js';
import type { Channel } from './channel.js';
import { type TlsError, tlsError } from './errors.js';
import type { Identity } from './identity.js';

/** The daemon sockets, as in `<run-dir>/util/`. */
export type Service = 'vmmd' | 'console' | 'stats';

/** Single: one reply. Read: replies until the daemon closes. Dump: until `Data block no-data`. */
export type ReplyMode = 'single' | 'read' | 'dump';

/** Which socket serves a command (semantics §2.1). */
export function serviceFor(command: Command): Service {
  if (command.type.startsWith('console-')) return 'console';
  if (command.type.startsWith('stats-')) return 'stats';
  return 'vmmd';
}

export function replyMode(command: Command): ReplyMode {
  if (command.type === 'console-subscribe' || command.type === 'stats-subscribe') return 'read';
  if (command.type === 'block-dump') return 'dump';
  return 'single';
}

/** Commands after which the client streams raw chunks that go on to the daemon (§14.3 step 5). */
export function forwardsChunks(command: Command): boolean {
  return (
    command.type === 'block-set' ||
    (command.type === 'block-add-old' && command.data !== null && command.data.length === 0) ||
    (command.type === 'block-set-old' && command.data.length === 0)
  );
}

/**
 * A create whose image travels after the handshake in raw chunks (§14.3 step 1): the chunks
 * follow the create on vmmd.sock, as block data does (Petrel (j)).
 */
export function streamsImage(command: Command): boolean {
  return command.type === 'unikernel-create' && command.config.image.length === 0;
}

/** The frames the endpoint writes to the daemon: a policy add per chain policy, then the command. */
export function requestFrames(identity: Identity, command: Command, sequence: () => bigint): Uint8Array[] {
  const frames: Uint8Array[] = [];
  if (serviceFor(command) === 'vmmd') {
    for (const { path, policy } of identity.policies) {
      const header: Header = { version: WIRE_VERSION, sequence: sequence(), name: pathName(path) };
      frames.push(
        encodeFrame({ header, payload: { kind: 'command', command: { type: 'policy-add', policy } } }),
      );
    }
  }
  const header: Header = { version: WIRE_VERSION, sequence: sequence(), name: identity.name };
  frames.push(encodeFrame({ header, payload: { kind: 'command', command } }));
  return frames;
}

function encodeFrame(wire: Wire): Uint8Array {
  const bytes = encodeWire(wire);
  // Every value here was decoded or built from decoded values, so encoding cannot fail.
  if (!bytes.ok) throw new Error(`cannot encode ${wire.payload.kind}: ${bytes.error.message}`);
  return frame(bytes.value);
}

/** The header of the reply the client gets last: (version 5, sequence 0, the derived name). */
const finalHeader = (identity: Identity): Header => ({
  version: WIRE_VERSION,
  sequence: 0n,
  name: identity.name,
});

/** The reply the client gets last. */
export function finalFrame(identity: Identity, payload: Payload): Uint8Array {
  return encodeFrame({ header: finalHeader(identity), payload });
}

const failure = (message: string): Payload => ({ kind: 'failure', message });

/** Albatross' rendering of a reply that is not a Success, in `expected success … got: …`. */
function describeReply(wire: Wire): string {
  const where = `host [unikernel: ${printName(wire.header.name)}]`;
  switch (wire.payload.kind) {
    case 'failure':
      return `${where}: command failed ${wire.payload.message}`;
    case 'command':
      return `${where}: command ${wire.payload.command.type}`;
    case 'data':
      return `${where}: data ${wire.payload.data.type}`;
    case 'reply':
      return `${where}: success`;
  }
}

export interface ProxyRequest {
  readonly identity: Identity;
  readonly client: Channel;
  /** Opens the daemon socket; null when it cannot be reached. */
  readonly connect: (service: Service) => Promise<Channel | null>;
  /** The endpoint's counter: every command written takes the next value. */
  readonly sequence: () => bigint;
  readonly maxFrameBytes: number;
}

export type ProxyOutcome =
  /** The final reply was written; `failure` is its message when it is a Failure. */
  | { readonly kind: 'replied'; readonly failure: string | null }
  /** The client went away before the final reply could be written. */
  | { readonly kind: 'gone'; readonly failure: string | null }
  /** The client's stream was refused or broke: closed without a reply. */
  | { readonly kind: 'refused'; readonly error: TlsError };

/** Runs one request; closes the daemon connection, then ends the client after the final reply. */
export async function proxy(request: ProxyRequest): Promise<ProxyOutcome> {
  const { identity } = request;
  const command = identity.command;
  const daemon = await request.connect(serviceFor(command));
  if (daemon === null) return reply(request, failure("couldn't reach service"));
  try {
    const outcome = await exchange(request, command, daemon);
    if (outcome.kind === 'refused') return outcome;
    if (outcome.kind === 'relayed')
      return { kind: outcome.written ? 'replied' : 'gone', failure: outcome.failure };
    return reply(request, outcome.payload);
  } finally {
    daemon.destroy();
  }
}

async function reply(request: ProxyRequest, payload: Payload): Promise<ProxyOutcome> {
  const written = await request.client.write(finalFrame(request.identity, payload));
  request.client.end();
  const message = payload.kind === 'failure' ? payload.message : null;
  return { kind: written ? 'replied' : 'gone', failure: message };
}

type Exchange =
  | { readonly kind: 'final'; readonly payload: Payload }
  | { readonly kind: 'refused'; readonly error: TlsError }
  /** The reply went to the client as it arrived, and the client was ended (or cut off). */
  | { readonly kind: 'relayed'; readonly written: boolean; readonly failure: string | null };

const final = (payload: Payload): Exchange => ({ kind: 'final', payload });

async function exchange(request: ProxyRequest, command: Command, daemon: Channel): Promise<Exchange> {
  const embedded = embeddedImage(command);
  // Petrel (c): an image in the leaf is bounded as a streamed one is, before anything is sent.
  if (embedded !== null && embedded.image.length > request.maxFrameBytes) {
    const limit = request.maxFrameBytes;
    const error = tlsError('E_TLS_FRAME_TOO_LARGE', `the image exceeds the limit of ${limit} bytes`, {
      limit,
    });
    return { kind: 'refused', error };
  }
  const frames = requestFrames(request.identity, embedded?.command ?? command, request.sequence);
  const commandFrame = frames.pop() as Uint8Array;
  for (const policyFrame of frames) {
    if (!(await daemon.write(policyFrame))) return final(failure('failed to write policy'));
    const answer = await daemon.next();
    if (answer.kind !== 'frame') return final(failure('read error after writing policy'));
    const decoded = decodeWire(answer.payload);
    if (!decoded.ok) return final(failure('read error after writing policy'));
    if (decoded.value.payload.kind !== 'reply') {
      return final(failure(`expected success when adding policy, got: ${describeReply(decoded.value)}`));
    }
  }
  // A get's reply is read as bytes, its image relayed as it comes (relayImage).
  const relays = command.type === 'unikernel-get';
  if (relays) daemon.raw();
  if (!(await daemon.write(commandFrame))) return final(failure("couldn't write unikernel to VMMD"));
  if (relays) return relayImage(request, daemon);
  if (embedded !== null) return answeredAfter(daemon, () => sendChunks(daemon, embedded.image));
  // Petrel (c): a streamed image is bounded by the frame limit, as if it came in one frame.
  if (streamsImage(command)) {
    return answeredAfter(daemon, () => copyChunks(request.client, daemon, request.maxFrameBytes));
  }
  if (forwardsChunks(command)) {
    return answeredAfter(daemon, () => copyChunks(request.client, daemon, Number.POSITIVE_INFINITY));
  }
  return collect(request, command, daemon);
}

/**
 * A create whose image came inside the leaf (stock 2.0-2.7 clients): the command without it, and
 * the image. The endpoint forwards it as a streamed create (Petrel (j)), the image cut into raw
 * chunks that are views of the certificate's bytes, so neither side copies a whole image again:
 * an encoded create frame would be another copy here and, arriving whole, one more in petreld,
 * where the chunks are instead stored as they come.
 */
export function embeddedImage(command: Command): { command: Command; image: Uint8Array } | null {
  if (command.type !== 'unikernel-create' || command.config.image.length === 0) return null;
  const without = { ...command, config: { ...command.config, image: new Uint8Array(0) } } as Command;
  return { command: without, image: command.config.image };
}

/** Bytes of the leaf's image per raw chunk sent on. */
const EMBEDDED_CHUNK = 256 * 1024;

/** The image of an embedded create to the daemon as raw chunks and their end (null: all sent). */
async function sendChunks(daemon: Channel, image: Uint8Array): Promise<Exchange | null> {
  for (let at = 0; at < image.length; at += EMBEDDED_CHUNK) {
    const piece = image.subarray(at, at + EMBEDDED_CHUNK);
    if (!(await daemon.write(frameHeader(piece.length))) || !(await daemon.write(piece))) {
      return final(failure("couldn't write unikernel to VMMD"));
    }
  }
  return (await daemon.write(END_OF_STREAM)) ? null : final(failure("couldn't write unikernel to VMMD"));
}

/**
 * Petreld's one answer to a command whose chunks `send` passes on (null once it sent them all).
 * petreld may answer before it has taken every chunk (an image that does not inflate, a device
 * that cannot be set) and then reads no more: its answer is the reply at once, where waiting
 * for the writes to drain would hang the session for good.
 */
async function answeredAfter(daemon: Channel, send: () => Promise<Exchange | null>): Promise<Exchange> {
  const answer = daemon.next();
  const sent = await Promise.race([send(), answer.then(() => null)]);
  if (sent !== null) return sent;
  const reply = await answer;
  if (reply.kind !== 'frame') return final(failure('error reading from fd'));
  const decoded = decodeWire(reply.payload);
  return decoded.ok ? final(decoded.value.payload) : final(failure('error reading from fd'));
}

/**
 * Raw chunks from the client to the daemon up to and including the client's zero chunk; more
 * than `limit` bytes refuse the stream (the daemon connection closes without its end).
 */
async function copyChunks(client: Channel, daemon: Channel, limit: number): Promise<Exchange | null> {
  let size = 0;
  for (;;) {
    const chunk = await client.next();
    if (chunk.kind === 'refused') return { kind: 'refused', error: chunk.error };
    if (chunk.kind === 'closed') return final(failure('reading tls chunk'));
    if (chunk.kind === 'frame') {
      size += chunk.payload.length;
      if (size > limit) {
        const error = tlsError(
          'E_TLS_FRAME_TOO_LARGE',
          `streamed image exceeds the limit of ${limit} bytes`,
          {
            limit,
          },
        );
        return { kind: 'refused', error };
      }
    }
    // The length, then the payload as it came: no copy of what may be a whole image.
    const written =
      chunk.kind === 'end'
        ? await daemon.write(END_OF_STREAM)
        : (await daemon.write(frameHeader(chunk.payload.length))) && (await daemon.write(chunk.payload));
    if (!written) return final(failure('writing block data'));
    if (chunk.kind === 'end') return null;
  }
}

/**
 * A get's reply, relayed as it arrives. The daemon's head is replaced by one with the final
 * header (the image's length and form stay), then the image goes on piece by piece, each
 * written to the client before the next is taken, so the endpoint holds a few pieces of it,
 * never all of it (it may be as large as the frame limit). A reply that is not an image (a
 * failure) is read whole and answered like any other. If the daemon stops in the middle of
 * the image, the client's connection is cut: a frame once begun cannot carry a failure.
 */
async function relayImage(request: ProxyRequest, daemon: Channel): Promise<Exchange> {
  const broken = final(failure('error reading from fd'));
  let held: Uint8Array = new Uint8Array(0);
  let total = -1;
  let head: ImageReplyHead | null | 'more' = 'more';
  // The length prefix and the head; or, for a reply that is not an image, the whole frame.
  while (head === 'more' || (head === null && held.length < 4 + total)) {
    const piece = await daemon.next();
    if (piece.kind !== 'frame') return broken;
    held = held.length === 0 ? piece.payload : Buffer.concat([held, piece.payload]);
    if (held.length < 4) continue;
    if (total < 0) {
      total = new DataView(held.buffer, held.byteOffset, 4).getInt32(0);
      if (total <= 0 || total > request.maxFrameBytes) return broken;
    }
    if (head === 'more') head = readImageReplyHead(held.subarray(4, 4 + total), total);
  }
  if (head === null) {
    const decoded = decodeWire(held.subarray(4, 4 + total));
    return decoded.ok ? final(decoded.value.payload) : broken;
  }
  const client = request.client;
  const relayed = (written: boolean, why: string | null = null): Exchange => {
    if (written) client.end();
    else client.destroy();
    return { kind: 'relayed', written, failure: why };
  };
  const replyHead = imageReplyHead(finalHeader(request.identity), head.compressed, head.imageLength);
  if (!replyHead.ok) return broken;
  const start = Buffer.concat([frameHeader(replyHead.value.length + head.imageLength), replyHead.value]);
  if (!(await client.write(start))) return relayed(false);
  let left = head.imageLength;
  let piece: Uint8Array = held.subarray(4 + head.headLength, 4 + total);
  for (;;) {
    if (piece.length > 0) {
      if (!(await client.write(piece))) return relayed(false);
      left -= piece.length;
    }
    if (left === 0) return relayed(true);
    const next = await daemon.next();
    if (next.kind !== 'frame') return relayed(false, 'the image was cut short by the daemon');
    piece = next.payload.subarray(0, left);
  }
}

async function collect(request: ProxyRequest, command: Command, daemon: Channel): Promise<Exchange> {
  const mode = replyMode(command);
  if (mode === 'single') {
    const answer = await daemon.next();
    if (answer.kind !== 'frame') return final(failure('error reading from fd'));
    const decoded = decodeWire(answer.payload);
    return decoded.ok ? final(decoded.value.payload) : final(failure('error reading from fd'));
  }
  // Read and dump: forward every frame as it came (the version is 5 on both sides, so "replace
  // the version by the client's" leaves the bytes as they are) until the end condition.
  // A subscriber unsubscribes by closing: then the daemon connection goes too. A console
  // subscriber that sends anything instead unsubscribes with the connection open (§2.3; `petrel
  // console --no-follow`): the daemon hears the same, sends what it queued, and closes.
  void request.client.closed.then(() => daemon.destroy());
  if (command.type === 'console-subscribe') {
    void request.client.next().then((said) => {
      if (said.kind === 'frame' || said.kind === 'end') void daemon.write(END_OF_STREAM);
    });
  }
  for (;;) {
    const answer = await daemon.next();
    if (answer.kind !== 'frame') return final(failure('exception while reading from fd'));
    if (mode === 'dump') {
      const decoded = decodeWire(answer.payload);
      const p = decoded.ok ? decoded.value.payload : null;
      if (p?.kind === 'data' && p.data.type === 'block' && p.data.data === null) return final(p);
    }
    if (!(await request.client.write(frame(answer.payload)))) return final(failure('exception'));
  }
}
