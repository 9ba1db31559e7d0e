// The top level of a message (albatross-wire.md §4.2, §4.9, §4.11): Wire = header + payload,
// with replies (Success) and data. `decodeWire` / `encodeWire` are the codec's main entry points.

import { parseName, printName } from '../resources/name.js';
import { encCommand, readCommand } from './command.js';
import { encPolicy, readPolicy } from './config.js';
import { ctx, type Der, enc, headBytes, Reader, TAG, toBytes, unknownTag } from './der.js';
import { fault, guard, type WireResult } from './errors.js';
import { EXITS_TAG, encExitEntry, readExitEntry } from './exits.js';
import {
  encInfo,
  encInfoV2,
  encInfoV3,
  encInfoV4,
  encInfoV5,
  readInfo,
  readInfoV2,
  readInfoV3,
  readInfoV4,
  readInfoV5,
} from './info.js';
import { encConfigV2, readConfigV2 } from './legacy.js';
import { encStatsData, readStatsData } from './stats.js';
import {
  type Data,
  type Header,
  type InfoRelease,
  type Name,
  type Payload,
  type Reply,
  WIRE_VERSION,
  type Wire,
} from './types.js';

/** The Success tag that answers each unikernel-info release: [7]→[5], [13]→[8], … [19]→[13]. */
export const INFO_REPLY_TAG: Readonly<Record<InfoRelease, number>> = {
  '2.0': 5,
  '2.1': 8,
  '2.4': 9,
  '2.6': 11,
  '2.7': 13,
};

/** Decodes one DER `Wire` value that must span `bytes` exactly. */
export function decodeWire(bytes: Uint8Array): WireResult<Wire> {
  return decodeWhole(bytes, readWire);
}

export function encodeWire(wire: Wire): WireResult<Uint8Array> {
  return guard(() => toBytes(encWire(wire)));
}

/**
 * The unikernel-image reply (Success [6]) up to its image: the caller sends the `length` image
 * bytes right after it, so a `get` streams from the file instead of building the message.
 * Together they are byte for byte `encodeWire` of the reply with the image.
 */
export function imageReplyHead(header: Header, compressed: boolean, length: number): WireResult<Uint8Array> {
  return guard(() => {
    const image = enc.omitted(TAG.OCTET_STRING, length);
    const reply = enc.explicit(6, enc.sequence([enc.boolean(compressed), image]));
    return headBytes(enc.sequence([encHeader(header), enc.explicit(1, reply)]), length);
  });
}

/** What `imageReplyHead` wrote, read back: the TLS endpoint relays a get's image after it. */
export interface ImageReplyHead {
  readonly header: Header;
  readonly compressed: boolean;
  /** Bytes of the message before the image. */
  readonly headLength: number;
  readonly imageLength: number;
}

/** Identifier, length and content offset of the TLV at `at`; 'more' when `bytes` ends inside them. */
function tlvAt(
  bytes: Uint8Array,
  at: number,
): { tag: number; length: number; content: number } | 'more' | null {
  if (at + 2 > bytes.length) return 'more';
  const tag = bytes[at] as number;
  const first = bytes[at + 1] as number;
  if (first < 0x80) return { tag, length: first, content: at + 2 };
  const count = first & 0x7f;
  if (count === 0 || count > 4) return null;
  if (at + 2 + count > bytes.length) return 'more';
  let length = 0;
  for (let i = at + 2; i < at + 2 + count; i++) length = length * 256 + (bytes[i] as number);
  return { tag, length, content: at + 2 + count };
}

/**
 * Reads the head of a message of `total` bytes from `prefix`, its first bytes: the head of an
 * image reply exactly as `imageReplyHead` writes it, or null for any other message (read it
 * whole), or 'more' while `prefix` ends before the head does. Only the head is looked at, so
 * an image need never be held to be relayed.
 */
export function readImageReplyHead(prefix: Uint8Array, total: number): ImageReplyHead | null | 'more' {
  const bytes = plain(prefix);
  const outer = tlvAt(bytes, 0);
  if (outer === 'more' || outer === null) return outer;
  if (outer.tag !== TAG.SEQUENCE || outer.content + outer.length !== total) return null;
  const head = tlvAt(bytes, outer.content);
  if (head === 'more' || head === null) return head;
  const headEnd = head.content + head.length;
  if (head.tag !== TAG.SEQUENCE || headEnd > total) return null;
  if (headEnd > bytes.length) return 'more';
  // The wrappers down to the image: each must end where the message ends.
  let at = headEnd;
  for (const tag of [ctx(1), ctx(6), TAG.SEQUENCE]) {
    const tlv = tlvAt(bytes, at);
    if (tlv === 'more' || tlv === null) return tlv;
    if (tlv.tag !== tag || tlv.content + tlv.length !== total) return null;
    at = tlv.content;
  }
  const flag = tlvAt(bytes, at);
  if (flag === 'more' || flag === null) return flag;
  if (flag.tag !== TAG.BOOLEAN || flag.length !== 1) return null;
  if (flag.content + 1 > bytes.length) return 'more';
  const image = tlvAt(bytes, flag.content + 1);
  if (image === 'more' || image === null) return image;
  if (image.tag !== TAG.OCTET_STRING || image.content + image.length !== total) return null;
  const header = guard(() => {
    const r = new Reader(bytes, outer.content, headEnd);
    const read = readHeader(r);
    r.done();
    return read;
  });
  if (!header.ok) return null;
  const compressed = bytes[flag.content] !== 0;
  // Byte for byte what imageReplyHead writes (DER: one encoding), or it is not relayed as one.
  const expected = imageReplyHead(header.value, compressed, image.length);
  if (!expected.ok || expected.value.length !== image.content) return null;
  for (let i = 0; i < image.content; i++) if (expected.value[i] !== bytes[i]) return null;
  return { header: header.value, compressed, headLength: image.content, imageLength: image.length };
}

/** A plain Uint8Array view (a Node Buffer's subarrays would be Buffers too): never a copy. */
/** Decodes one value with `read` from `bytes`, which the value must span exactly. */
export function decodeWhole<T>(bytes: Uint8Array, read: (r: Reader) => T): WireResult<T> {
  return guard(() => {
    const r = new Reader(plain(bytes));
    const value = read(r);
    r.done();
    return value;
  });
}

export function plain(bytes: Uint8Array): Uint8Array {
  if (!(bytes instanceof Uint8Array)) fault('E_WIRE_INTERNAL', 'input is not a byte array', null);
  return bytes.constructor === Uint8Array
    ? bytes
    : new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

export function readWire(r: Reader): Wire {
  if (r.peek() !== TAG.SEQUENCE) fault('E_WIRE_TAG', 'not a sequence', r.offset);
  return r.sequence((s) => ({ header: readHeader(s), payload: readPayload(s) }), 'Wire');
}

export function encWire(wire: Wire): Der {
  return enc.sequence([encHeader(wire.header), encPayload(wire.payload)]);
}

function readHeader(r: Reader): Header {
  return r.sequence((s) => {
    return { version: readVersion(s), sequence: s.int64('sequence'), name: readName(s) };
  }, 'header');
}

export function encHeader(h: Header): Der {
  if (h.version !== WIRE_VERSION) fault('E_WIRE_ENCODE', `unknown version number ${String(h.version)}`, null);
  return enc.sequence([enc.integer(WIRE_VERSION), enc.int64(h.sequence), encName(h.name)]);
}

/** `version`: an INTEGER that must be 5 (`unknown version number 0x%X` otherwise). */
export function readVersion(r: Reader): typeof WIRE_VERSION {
  const at = r.offset;
  const version = r.bigint('version');
  if (version !== BigInt(WIRE_VERSION)) {
    const magnitude = (version < 0n ? -version : version).toString(16).toUpperCase();
    fault('E_WIRE_VERSION', `unknown version number ${version < 0n ? '-' : ''}0x${magnitude}`, at);
  }
  return WIRE_VERSION;
}

/** `name`: a UTF8String holding a name string, run through the Name parser. */
export function readName(r: Reader): Name {
  const at = r.offset;
  const parsed = parseName(r.utf8('name'));
  if (!parsed.ok) fault('E_WIRE_NAME', parsed.error.message, at);
  return parsed.value;
}

export const encName = (name: Name): Der => enc.utf8(printName(name));

function readPayload(r: Reader): Payload {
  return r.choice('payload', (n, inner): Payload => {
    switch (n) {
      case 0:
        return { kind: 'command', command: readCommand(inner) };
      case 1:
        return { kind: 'reply', reply: readReply(inner) };
      case 2:
        return { kind: 'failure', message: inner.utf8('failure') };
      case 3:
        return { kind: 'data', data: readData(inner) };
      default:
        return unknownTag('payload', ctx(n), r.lastStart);
    }
  });
}

function encPayload(p: Payload): Der {
  switch (p.kind) {
    case 'command':
      return enc.explicit(0, encCommand(p.command));
    case 'reply':
      return enc.explicit(1, encReply(p.reply));
    case 'failure':
      return enc.explicit(2, enc.utf8(p.message));
    case 'data':
      return enc.explicit(3, encData(p.data));
  }
  return fault('E_WIRE_ENCODE', `unknown payload kind ${String((p as { kind?: unknown }).kind)}`, null);
}

const named =
  <T>(read: (r: Reader) => T) =>
  (r: Reader) =>
    r.sequence((s) => ({ name: readName(s), info: read(s) }));

function readReply(r: Reader): Reply {
  return r.choice('reply', (n, inner): Reply => {
    switch (n) {
      case 0:
        inner.null();
        return { type: 'empty' };
      case 1:
        return { type: 'string', text: inner.utf8('string') };
      case 2:
        return {
          type: 'policies',
          entries: inner.listOf((e) => e.sequence((s) => ({ name: readName(s), policy: readPolicy(s) }))),
        };
      case 3:
        return {
          type: 'unikernels-old',
          entries: inner.listOf((e) => e.sequence((s) => ({ name: readName(s), config: readConfigV2(s) }))),
        };
      case 4:
        return {
          type: 'block-devices',
          entries: inner.listOf((e) =>
            e.sequence((s) => ({ name: readName(s), size: s.int('size'), active: s.boolean('active') })),
          ),
        };
      case 5:
        return { type: 'unikernel-info', release: '2.0', entries: inner.listOf(named(readInfoV2)) };
      case 8:
        return { type: 'unikernel-info', release: '2.1', entries: inner.listOf(named(readInfoV3)) };
      case 9:
        return { type: 'unikernel-info', release: '2.4', entries: inner.listOf(named(readInfoV4)) };
      case 11:
        return { type: 'unikernel-info', release: '2.6', entries: inner.listOf(named(readInfoV5)) };
      case 13:
        return { type: 'unikernel-info', release: '2.7', entries: inner.listOf(named(readInfo)) };
      case 6:
      case 7:
        return inner.sequence((s) => ({
          type: n === 6 ? 'unikernel-image' : 'block-image-old',
          compressed: s.boolean('compressed'),
          image: s.octets('image'),
        }));
      case 10:
        return { type: 'block-device-image', compressed: inner.boolean('compressed') };
      case 12:
        return { type: 'consoles', names: inner.listOf(readName) };
      case EXITS_TAG:
        return { type: 'unikernel-exits', entries: inner.listOf((e) => readExitEntry(e, readName)) };
      default:
        return unknownTag('reply', ctx(n), r.lastStart);
    }
  });
}

const list = <T>(items: readonly T[], write: (item: T) => Der): Der => enc.sequence(items.map(write));
const entry = (name: Name, value: Der): Der => enc.sequence([encName(name), value]);

function encReply(reply: Reply): Der {
  switch (reply.type) {
    case 'empty':
      return enc.explicit(0, enc.null());
    case 'string':
      return enc.explicit(1, enc.utf8(reply.text));
    case 'policies':
      return enc.explicit(
        2,
        list(reply.entries, (e) => entry(e.name, encPolicy(e.policy))),
      );
    case 'unikernels-old':
      return enc.explicit(
        3,
        list(reply.entries, (e) => entry(e.name, encConfigV2(e.config))),
      );
    case 'block-devices':
      return enc.explicit(
        4,
        list(reply.entries, (e) =>
          enc.sequence([encName(e.name), enc.integer(e.size), enc.boolean(e.active)]),
        ),
      );
    case 'unikernel-info':
      return enc.explicit(INFO_REPLY_TAG[reply.release] ?? badReply(reply), encInfoList(reply));
    case 'unikernel-image':
    case 'block-image-old':
      return enc.explicit(
        reply.type === 'unikernel-image' ? 6 : 7,
        enc.sequence([enc.boolean(reply.compressed), enc.octets(reply.image)]),
      );
    case 'block-device-image':
      return enc.explicit(10, enc.boolean(reply.compressed));
    case 'consoles':
      return enc.explicit(12, list(reply.names, encName));
    case 'unikernel-exits':
      return enc.explicit(
        EXITS_TAG,
        list(reply.entries, (e) => encExitEntry(e, encName)),
      );
  }
  return badReply(reply);
}

function encInfoList(reply: Extract<Reply, { type: 'unikernel-info' }>): Der {
  switch (reply.release) {
    case '2.0':
      return list(reply.entries, (e) => entry(e.name, encInfoV2(e.info)));
    case '2.1':
      return list(reply.entries, (e) => entry(e.name, encInfoV3(e.info)));
    case '2.4':
      return list(reply.entries, (e) => entry(e.name, encInfoV4(e.info)));
    case '2.6':
      return list(reply.entries, (e) => entry(e.name, encInfoV5(e.info)));
    case '2.7':
      return list(reply.entries, (e) => entry(e.name, encInfo(e.info)));
  }
  return badReply(reply);
}

function badReply(reply: unknown): never {
  const shown = reply as { type?: unknown; release?: unknown };
  return fault(
    'E_WIRE_ENCODE',
    `cannot encode reply ${String(shown.type)} ${String(shown.release ?? '')}`,
    null,
  );
}

function readData(r: Reader): Data {
  return r.choice('data', (n, inner): Data => {
    switch (n) {
      case 0:
        return inner.sequence((s) => ({
          type: 'console-old',
          timestamp: s.utcTime('timestamp'),
          line: s.utf8Bytes('line'),
        }));
      case 1:
        return { type: 'statistics', stats: readStatsData(inner) };
      case 2:
        return fault('E_WIRE_UNSUPPORTED', 'support for log dropped', r.lastStart);
      case 3:
        return inner.sequence((s) => ({
          type: 'console',
          timestamp: s.generalizedTime('timestamp'),
          line: s.utf8Bytes('line'),
        }));
      case 4:
        return inner.choice('block data', (m, chunk): Data => {
          if (m === 0) return { type: 'block', data: chunk.octets('some-data') };
          if (m === 1) return { type: 'block', data: chunk.null() };
          return unknownTag('block data', ctx(m), inner.lastStart);
        });
      default:
        return unknownTag('data', ctx(n), r.lastStart);
    }
  });
}

function encData(data: Data): Der {
  switch (data.type) {
    case 'console-old':
      return enc.explicit(0, enc.sequence([enc.utcTime(data.timestamp), enc.utf8Bytes(data.line)]));
    case 'statistics':
      return enc.explicit(1, encStatsData(data.stats));
    case 'console':
      return enc.explicit(3, enc.sequence([enc.generalizedTime(data.timestamp), enc.utf8Bytes(data.line)]));
    case 'block':
      return enc.explicit(
        4,
        data.data === null ? enc.explicit(1, enc.null()) : enc.explicit(0, enc.octets(data.data)),
      );
  }
  return fault('E_WIRE_ENCODE', `cannot encode data ${String((data as { type?: unknown }).type)}`, null);
}
