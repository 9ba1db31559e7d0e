// A small strict DER reader and writer, exactly the subset the Albatross grammar uses.
// Hand-written rather than asn1js: asn1js decodes BER leniently (indefinite lengths, non-minimal
// integers and lengths pass), copies OCTET STRING contents, has no 63-bit INTEGER notion and does
// not sort SET OF on encode, so every DER rule below would have to be re-checked on top of it.
// Here each rule is one visible line, OCTET STRINGs are zero-copy views, and errors carry offsets.

import { fault } from './errors.js';
import { decodeGeneralizedTime, decodeUtcTime, encodeGeneralizedTime, encodeUtcTime } from './time.js';

export const TAG = {
  BOOLEAN: 0x01,
  INTEGER: 0x02,
  OCTET_STRING: 0x04,
  NULL: 0x05,
  OID: 0x06,
  UTF8: 0x0c,
  UTC_TIME: 0x17,
  GENERALIZED_TIME: 0x18,
  SEQUENCE: 0x30,
  SET: 0x31,
} as const;

/** The identifier of the constructed context-specific tag `[n]`. */
export const ctx = (n: number): number => 0xa0 + n;

/** OCaml's native integers: every Albatross INTEGER lies in −2^62 … 2^62−1. */
export const INT63_MIN = -(1n << 62n);
export const INT63_MAX = (1n << 62n) - 1n;
const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;

const NAMES: Record<number, string> = {
  1: 'BOOLEAN',
  2: 'INTEGER',
  4: 'OCTET STRING',
  5: 'NULL',
  6: 'OBJECT IDENTIFIER',
  12: 'UTF8String',
  23: 'UTCTime',
  24: 'GeneralizedTime',
  48: 'SEQUENCE',
  49: 'SET',
};

export function describeTag(tag: number): string {
  if (tag < 0) return 'the end of the value';
  const known = NAMES[tag];
  if (known !== undefined) return known;
  const hex = tag.toString(16).padStart(2, '0');
  if ((tag & 0xe0) === 0xa0) return `[${tag & 0x1f}] (${hex})`;
  return `identifier ${hex}`;
}

const utf8Strict = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const utf8Encoder = new TextEncoder();

/**
 * Reads a run of TLVs in `bytes[start, end)`. Offsets are absolute positions in `bytes`, so
 * nested readers report positions in the original input.
 */
export class Reader {
  readonly bytes: Uint8Array;
  #pos: number;
  readonly #end: number;
  /** Bounds of the TLV read last: its first byte, its content, its end. */
  #tlvStart = 0;
  #contentStart = 0;

  constructor(bytes: Uint8Array, start = 0, end = bytes.length) {
    this.bytes = bytes;
    this.#pos = start;
    this.#end = end;
  }

  get offset(): number {
    return this.#pos;
  }

  atEnd(): boolean {
    return this.#pos >= this.#end;
  }

  /** The next identifier byte, or −1 at the end. */
  peek(): number {
    return this.#pos < this.#end ? (this.bytes[this.#pos] as number) : -1;
  }

  /** Rejects anything left after the last element (explicit wrappers hold exactly one). */
  done(): void {
    if (this.#pos < this.#end)
      fault('E_WIRE_TRAILING', `trailing bytes (${this.#end - this.#pos})`, this.#pos);
  }

  /** Reads the next TLV header, leaves the reader after the whole TLV, returns its identifier. */
  next(): number {
    const bytes = this.bytes;
    const start = this.#pos;
    const end = this.#end;
    if (start >= end) fault('E_WIRE_TRUNCATED', 'value ended where another element was expected', start);
    const tag = bytes[start] as number;
    if ((tag & 0x1f) === 0x1f) fault('E_WIRE_TAG', 'high-tag-number identifier', start);
    if (start + 1 >= end) fault('E_WIRE_TRUNCATED', 'buffer too short for a length', start);
    const first = bytes[start + 1] as number;
    let length: number;
    let content: number;
    if (first < 0x80) {
      length = first;
      content = start + 2;
    } else {
      const count = first & 0x7f;
      if (count === 0) fault('E_WIRE_LENGTH', 'indefinite length', start + 1);
      if (count > 4) fault('E_WIRE_LENGTH', `length of ${count} bytes is too large`, start + 1);
      content = start + 2 + count;
      if (content > end) fault('E_WIRE_TRUNCATED', 'buffer too short for a length', start + 1);
      if (bytes[start + 2] === 0) fault('E_WIRE_LENGTH', 'non-minimal length (leading zero)', start + 1);
      length = 0;
      for (let i = start + 2; i < content; i++) length = length * 256 + (bytes[i] as number);
      if (length < 0x80) fault('E_WIRE_LENGTH', 'non-minimal length (fits the short form)', start + 1);
    }
    if (length > end - content) {
      fault('E_WIRE_TRUNCATED', `length ${length} exceeds the ${end - content} bytes available`, start + 1);
    }
    this.#tlvStart = start;
    this.#contentStart = content;
    this.#pos = content + length;
    return tag;
  }

  /** Reads the next TLV and requires identifier `tag`. */
  expect(tag: number, what?: string): void {
    const start = this.#pos;
    const found = this.#pos < this.#end ? this.peek() : -1;
    if (found !== tag) {
      const subject = what === undefined ? describeTag(tag) : `${what} (${describeTag(tag)})`;
      if (found < 0) fault('E_WIRE_TRUNCATED', `missing ${subject}`, start);
      fault('E_WIRE_TAG', `expected ${subject} but found ${describeTag(found)}`, start);
    }
    this.next();
  }

  /** The content of the next TLV (identifier `tag`) as a reader. */
  enter(tag: number, what?: string): Reader {
    this.expect(tag, what);
    return new Reader(this.bytes, this.#contentStart, this.#pos);
  }

  /** A reader over the content of the TLV just read with `next()`. */
  content(): Reader {
    return new Reader(this.bytes, this.#contentStart, this.#pos);
  }

  /** Offset of the first byte of the TLV read last (for error messages). */
  get lastStart(): number {
    return this.#tlvStart;
  }

  /** The whole encoding (identifier, length, content) of the TLV read last. */
  lastTlv(): Uint8Array {
    return this.bytes.subarray(this.#tlvStart, this.#pos);
  }

  /** Content of the next primitive TLV with identifier `tag`, as absolute [start, end). */
  #primitive(tag: number, what?: string): number {
    this.expect(tag, what);
    return this.#contentStart;
  }

  /** `[n] X` with EXPLICIT tagging: exactly one element inside. */
  explicit<T>(n: number, read: (r: Reader) => T): T {
    const inner = this.enter(ctx(n));
    const value = read(inner);
    inner.done();
    return value;
  }

  /** An OPTIONAL `[n] X`: null when the next identifier is not `[n]`. */
  optionalExplicit<T>(n: number, read: (r: Reader) => T): T | null {
    return this.peek() === ctx(n) ? this.explicit(n, read) : null;
  }

  sequence<T>(read: (r: Reader) => T, what?: string): T {
    const inner = this.enter(TAG.SEQUENCE, what);
    const value = read(inner);
    inner.done();
    return value;
  }

  /** SEQUENCE OF (or SET OF with `tag` 0x31): elements in wire order; DER readers accept any order. */
  listOf<T>(read: (r: Reader) => T, tag: number = TAG.SEQUENCE): T[] {
    const inner = this.enter(tag);
    const items: T[] = [];
    while (!inner.atEnd()) items.push(read(inner));
    return items;
  }

  setOf<T>(read: (r: Reader) => T): T[] {
    return this.listOf(read, TAG.SET);
  }

  null(what?: string): null {
    const start = this.#primitive(TAG.NULL, what);
    if (this.#pos !== start) fault('E_WIRE_NULL', 'NULL with content', this.#tlvStart);
    return null;
  }

  boolean(what?: string): boolean {
    const start = this.#primitive(TAG.BOOLEAN, what);
    if (this.#pos - start !== 1)
      fault('E_WIRE_BOOLEAN', 'BOOLEAN must have exactly one content byte', this.#tlvStart);
    return this.bytes[start] !== 0;
  }

  /** An INTEGER as an exact bigint, range-checked to OCaml's 63 bits. */
  bigint(what?: string): bigint {
    const start = this.#checkedInteger(what);
    const length = this.#pos - start;
    if (length <= 6) return BigInt(this.#small(start, length));
    let value = BigInt.asIntN(8, BigInt(this.bytes[start] as number));
    for (let i = start + 1; i < this.#pos; i++) value = (value << 8n) | BigInt(this.bytes[i] as number);
    if (value < INT63_MIN || value > INT63_MAX)
      fault('E_WIRE_INT_RANGE', 'INTEGER: int overflow', this.#tlvStart);
    return value;
  }

  /** An INTEGER for a field held as a JavaScript number: refused beyond ±(2^53 − 1). */
  int(what?: string): number {
    const start = this.#checkedInteger(what);
    const length = this.#pos - start;
    if (length <= 6) return this.#small(start, length);
    this.#pos = this.#tlvStart;
    const value = this.bigint(what);
    if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < BigInt(Number.MIN_SAFE_INTEGER)) {
      fault(
        'E_WIRE_INT_RANGE',
        `INTEGER ${value}${what ? ` (${what})` : ''} is out of range`,
        this.#tlvStart,
      );
    }
    return Number(value);
  }

  /** A non-negative INTEGER that fits a number (sizes, ids, counts). */
  count(what: string): number {
    const value = this.int(what);
    if (value < 0) fault('E_WIRE_INT_RANGE', `${what} must not be negative (${value})`, this.#tlvStart);
    return value;
  }

  #checkedInteger(what?: string): number {
    const start = this.#primitive(TAG.INTEGER, what);
    const length = this.#pos - start;
    if (length === 0) fault('E_WIRE_INTEGER', 'empty INTEGER', this.#tlvStart);
    if (length > 1) {
      const b0 = this.bytes[start] as number;
      const b1 = this.bytes[start + 1] as number;
      if ((b0 === 0 && b1 < 0x80) || (b0 === 0xff && b1 >= 0x80)) {
        fault('E_WIRE_INTEGER', 'non-minimal INTEGER', this.#tlvStart);
      }
    }
    if (length > 8) fault('E_WIRE_INT_RANGE', 'INTEGER: int overflow', this.#tlvStart);
    return start;
  }

  #small(start: number, length: number): number {
    const bytes = this.bytes;
    let value = (bytes[start] as number) >= 0x80 ? (bytes[start] as number) - 256 : (bytes[start] as number);
    for (let i = 1; i < length; i++) value = value * 256 + (bytes[start + i] as number);
    return value;
  }

  /** OCTET STRING content as a view into the input (never copied). */
  octets(what?: string): Uint8Array {
    const start = this.#primitive(TAG.OCTET_STRING, what);
    return this.bytes.subarray(start, this.#pos);
  }

  /** `int64`: an OCTET STRING of exactly 8 bytes, big-endian two's complement. */
  int64(what?: string): bigint {
    const start = this.#primitive(TAG.OCTET_STRING, what);
    if (this.#pos - start !== 8)
      fault('E_WIRE_INT64', 'int64 must be an 8-byte OCTET STRING', this.#tlvStart);
    const bytes = this.bytes;
    const hi = ((bytes[start] as number) << 24) | ((bytes[start + 1] as number) << 16);
    const high = hi | ((bytes[start + 2] as number) << 8) | (bytes[start + 3] as number);
    const low =
      (bytes[start + 4] as number) * 0x1000000 +
      (((bytes[start + 5] as number) << 16) |
        ((bytes[start + 6] as number) << 8) |
        (bytes[start + 7] as number));
    return (BigInt(high) << 32n) + BigInt(low);
  }

  /** UTF8String content: must be valid UTF-8 (decoded without repair, so re-encoding is exact). */
  utf8(what?: string): string {
    const start = this.#primitive(TAG.UTF8, what);
    return decodeUtf8(this.bytes, start, this.#pos, this.#tlvStart);
  }

  /** UTF8String content as raw bytes (console lines may hold anything). */
  utf8Bytes(what?: string): Uint8Array {
    const start = this.#primitive(TAG.UTF8, what);
    return this.bytes.subarray(start, this.#pos);
  }

  generalizedTime(what?: string): Date {
    const start = this.#primitive(TAG.GENERALIZED_TIME, what);
    return decodeGeneralizedTime(this.bytes, start, this.#pos, this.#tlvStart);
  }

  utcTime(what?: string): Date {
    const start = this.#primitive(TAG.UTC_TIME, what);
    return decodeUtcTime(this.bytes, start, this.#pos, this.#tlvStart);
  }

  /** OBJECT IDENTIFIER content bytes (compared bytewise, never interpreted). */
  oid(): Uint8Array {
    const start = this.#primitive(TAG.OID);
    return this.bytes.subarray(start, this.#pos);
  }
}

export function decodeUtf8(bytes: Uint8Array, start: number, end: number, at: number): string {
  let ascii = end - start <= 64;
  if (ascii) {
    for (let i = start; i < end; i++) {
      if ((bytes[i] as number) >= 0x80) {
        ascii = false;
        break;
      }
    }
  }
  if (ascii) return String.fromCharCode(...bytes.subarray(start, end));
  try {
    return utf8Strict.decode(bytes.subarray(start, end));
  } catch {
    return fault('E_WIRE_UTF8', 'UTF8String is not valid UTF-8', at);
  }
}

// ---------------------------------------------------------------------------------------------
// Writer: values are built as a tree of nodes that know their encoded size, then written once
// into a buffer of exactly that size. OCTET STRING contents are copied only in that final write.

export interface Der {
  readonly size: number;
  write(out: Uint8Array, pos: number): number;
}

const lengthSize = (n: number): number =>
  n < 0x80 ? 1 : n < 0x100 ? 2 : n < 0x10000 ? 3 : n < 0x1000000 ? 4 : 5;

function writeHeader(out: Uint8Array, pos: number, tag: number, length: number): number {
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

export function toBytes(node: Der): Uint8Array {
  const out = new Uint8Array(node.size);
  node.write(out, 0);
  return out;
}

const encodeFault = (what: string): never => fault('E_WIRE_ENCODE', what, null);

const EMPTY = new Uint8Array(0);
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
  integer: (value: number | bigint): Der => new Primitive(TAG.INTEGER, integerBytes(value)),
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
};

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
