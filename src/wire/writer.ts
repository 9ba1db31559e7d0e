// The DER writer: values become a tree of nodes that know their encoded size, written once into
// a buffer of exactly that size (OCTET STRING contents are copied only then). SET OF is sorted.

import { fault } from './errors.js';
import { ctx, INT63_MAX, INT63_MIN, INT64_MAX, INT64_MIN, TAG } from './tags.js';
import { encodeGeneralizedTime, encodeUtcTime } from './time.js';

const utf8Encoder = new TextEncoder();

export interface Der {
  readonly size: number;
  write(out: Uint8Array, pos: number): number;
}

export const lengthSize = (n: number): number =>
  n < 0x80 ? 1 : n < 0x100 ? 2 : n < 0x10000 ? 3 : n < 0x1000000 ? 4 : 5;

export function writeHeader(out: Uint8Array, pos: number, tag: number, length: number): number {
  out[pos++] = tag;
  if (length < 0x80) {
    out[pos++] = length;
    return pos;
  }
  const count = lengthSize(length) - 1;
  out[pos++] = 0x80 | count;
  for (let shift = (count - 1) * 8; shift >= 0; shift -= 8)
    out[pos++] = Math.floor(length / 2 ** shift) & 0xff;
  return pos;
}

class Primitive implements Der {
  readonly size: number;
  constructor(
    readonly tag: number,
    readonly body: Uint8Array,
  ) {
    this.size = 1 + lengthSize(body.length) + body.length;
  }
  write(out: Uint8Array, pos: number): number {
    const at = writeHeader(out, pos, this.tag, this.body.length);
    out.set(this.body, at);
    return at + this.body.length;
  }
}

class Constructed implements Der {
  readonly size: number;
  readonly #length: number;
  constructor(
    readonly tag: number,
    readonly children: readonly Der[],
  ) {
    let length = 0;
    for (const child of children) length += child.size;
    this.#length = length;
    this.size = 1 + lengthSize(length) + length;
  }
  write(out: Uint8Array, pos: number): number {
    let at = writeHeader(out, pos, this.tag, this.#length);
    for (const child of this.children) at = child.write(out, at);
    return at;
  }
}

/** Already-encoded bytes (a sorted SET element). */
class Encoded implements Der {
  readonly size: number;
  constructor(readonly bytes: Uint8Array) {
    this.size = bytes.length;
  }
  write(out: Uint8Array, pos: number): number {
    out.set(this.bytes, pos);
    return pos + this.bytes.length;
  }
}

/**
 * A primitive whose `length` content bytes are not in memory: it counts in every size, and
 * writing it writes its header only. Ending an encoding with one gives the head of a message
 * whose last value is sent separately (an image streamed from a file).
 */
class Omitted implements Der {
  readonly size: number;
  constructor(
    readonly tag: number,
    readonly length: number,
  ) {
    this.size = 1 + lengthSize(length) + length;
  }
  write(out: Uint8Array, pos: number): number {
    return writeHeader(out, pos, this.tag, this.length) + this.length;
  }
}

export function toBytes(node: Der): Uint8Array {
  const out = new Uint8Array(node.size);
  node.write(out, 0);
  return out;
}

/** The identifier and length octets of a value with `tag` and `length` content bytes. */
export function derHeader(tag: number, length: number): Uint8Array {
  if (!Number.isSafeInteger(length) || length < 0) encodeFault(`invalid length ${length}`);
  const out = new Uint8Array(1 + lengthSize(length));
  writeHeader(out, 0, tag, length);
  return out;
}

/** The encoding of `node` without the content of the `enc.omitted` value that ends it. */
export function headBytes(node: Der, omitted: number): Uint8Array {
  const out = new Uint8Array(node.size - omitted);
  node.write(out, 0);
  return out;
}

const encodeFault = (what: string): never => fault('E_WIRE_ENCODE', what, null);

const EMPTY = new Uint8Array(0);
/** INTEGER nodes for 0…1023 (sizes, ids, counts), shared because nodes are immutable. */
const SMALL_INTEGERS: readonly Primitive[] = Array.from(
  { length: 1024 },
  (_, n) =>
    new Primitive(
      TAG.INTEGER,
      n < 0x80 ? Uint8Array.of(n) : n < 0x8000 ? Uint8Array.of(n >> 8, n & 0xff) : EMPTY,
    ),
);
const NULL_NODE = new Primitive(TAG.NULL, EMPTY);
const TRUE_NODE = new Primitive(TAG.BOOLEAN, Uint8Array.of(0xff));
const FALSE_NODE = new Primitive(TAG.BOOLEAN, Uint8Array.of(0x00));

export const enc = {
  null: (): Der => NULL_NODE,
  boolean: (value: boolean): Der => {
    if (typeof value !== 'boolean') encodeFault(`not a boolean: ${String(value)}`);
    return value ? TRUE_NODE : FALSE_NODE;
  },
  /** INTEGER from a number (must be a safe integer) or a bigint (must fit 63 bits). */
  integer: (value: number | bigint): Der =>
    (typeof value === 'number' ? SMALL_INTEGERS[value] : undefined) ??
    new Primitive(TAG.INTEGER, integerBytes(value)),
  octets: (bytes: Uint8Array): Der => {
    if (!(bytes instanceof Uint8Array)) encodeFault('not a byte array');
    return new Primitive(TAG.OCTET_STRING, bytes);
  },
  int64: (value: bigint): Der => new Primitive(TAG.OCTET_STRING, int64Bytes(value)),
  utf8: (text: string): Der => new Primitive(TAG.UTF8, utf8Bytes(text)),
  utf8Bytes: (bytes: Uint8Array): Der => {
    if (!(bytes instanceof Uint8Array)) encodeFault('not a byte array');
    return new Primitive(TAG.UTF8, bytes);
  },
  generalizedTime: (time: Date): Der =>
    new Primitive(TAG.GENERALIZED_TIME, asciiBytes(encodeGeneralizedTime(time))),
  utcTime: (time: Date): Der => new Primitive(TAG.UTC_TIME, asciiBytes(encodeUtcTime(time))),
  sequence: (children: readonly Der[]): Der => new Constructed(TAG.SEQUENCE, children),
  /** SET OF: elements sorted by their complete encodings, bytewise; duplicates kept. */
  set: (children: readonly Der[]): Der => {
    if (children.length < 2) return new Constructed(TAG.SET, children);
    if (children.every((c) => c instanceof Primitive && c.body.length < 0x80)) {
      return new Constructed(TAG.SET, [...(children as Primitive[])].sort(comparePrimitives));
    }
    const encoded = children.map(toBytes).sort(compareBytes);
    return new Constructed(
      TAG.SET,
      encoded.map((bytes) => new Encoded(bytes)),
    );
  },
  explicit: (n: number, child: Der): Der => new Constructed(ctx(n), [child]),
  /** IMPLICIT [n] over a constructed type: its own identifier replaced by `[n]`. */
  implicit: (n: number, children: readonly Der[]): Der => new Constructed(ctx(n), children),
  constructed: (tag: number, children: readonly Der[]): Der => new Constructed(tag, children),
  primitive: (tag: number, body: Uint8Array): Der => new Primitive(tag, body),
  /** A primitive of `length` bytes written elsewhere (see `headBytes`); sizes count them. */
  omitted: (tag: number, length: number): Der => {
    if (!Number.isSafeInteger(length) || length < 0) encodeFault(`invalid length ${length}`);
    return new Omitted(tag, length);
  },
};

/** The order of the encodings of two short primitives (identifier, one length byte, body). */
function comparePrimitives(a: Primitive, b: Primitive): number {
  return a.tag - b.tag || a.body.length - b.body.length || compareBytes(a.body, b.body);
}

/** Unsigned bytewise order; on a common prefix the shorter sorts first. */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const d = (a[i] as number) - (b[i] as number);
    if (d !== 0) return d;
  }
  return a.length - b.length;
}

/** Accepts bigint-valued fields given as numbers or decimal strings (JSON input). */
export function toBigInt(value: unknown, what: string): bigint {
  if (typeof value === 'bigint') return value;
  if ((typeof value === 'number' && Number.isSafeInteger(value)) || typeof value === 'string') {
    try {
      return BigInt(value);
    } catch {
      // fall through to the fault
    }
  }
  return encodeFault(`${what} is not an integer: ${String(value)}`);
}

function integerBytes(value: number | bigint): Uint8Array {
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) encodeFault(`INTEGER ${value} is not a safe integer`);
    if (value >= -0x80 && value < 0x80) return Uint8Array.of(value & 0xff);
    if (value >= -0x8000 && value < 0x8000) return Uint8Array.of((value >> 8) & 0xff, value & 0xff);
  }
  let n = toBigInt(value, 'INTEGER');
  if (n < INT63_MIN || n > INT63_MAX) encodeFault(`INTEGER ${n} is outside the 63-bit range`);
  const out: number[] = [];
  for (;;) {
    const byte = Number(n & 0xffn);
    out.push(byte);
    n >>= 8n;
    if ((n === 0n && byte < 0x80) || (n === -1n && byte >= 0x80)) break;
  }
  return Uint8Array.from(out.reverse());
}

function int64Bytes(value: bigint): Uint8Array {
  const n = toBigInt(value, 'int64');
  if (n < INT64_MIN || n > INT64_MAX) encodeFault(`int64 ${n} is outside the 64-bit range`);
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigInt64(0, n);
  return out;
}

const LONE_SURROGATE = /\p{Cs}/u;

export function utf8Bytes(text: string): Uint8Array {
  if (typeof text !== 'string') encodeFault(`not a string: ${String(text)}`);
  let ascii = true;
  for (let i = 0; i < text.length; i++) {
    if (text.charCodeAt(i) >= 0x80) {
      ascii = false;
      break;
    }
  }
  if (ascii) return asciiBytes(text);
  if (LONE_SURROGATE.test(text)) encodeFault('string holds a lone surrogate (not representable in UTF-8)');
  return utf8Encoder.encode(text);
}

function asciiBytes(text: string): Uint8Array {
  const out = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
  return out;
}
