// The strict DER reader: one TLV at a time, every rule of albatross-wire.md §2 checked where the
// bytes are read, OCTET STRINGs returned as views, every error with its absolute byte offset.

import { fault } from './errors.js';
import { ctx, describeTag, INT63_MAX, INT63_MIN, TAG } from './tags.js';
import { decodeGeneralizedTime, decodeUtcTime } from './time.js';

const utf8Strict = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

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
    const found = this.peek();
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

  /**
   * An untagged CHOICE of explicit `[n]` alternatives: `alternative(n, content)` reads the one
   * element inside; any other identifier is an unknown `what`.
   */
  choice<T>(what: string, alternative: (n: number, inner: Reader) => T): T {
    const at = this.#pos;
    const tag = this.next();
    if ((tag & 0xe0) !== 0xa0) unknownTag(what, tag, at);
    const inner = this.content();
    const value = alternative(tag & 0x1f, inner);
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
    return length <= 6 ? BigInt(this.#small(start, length)) : this.#large(start);
  }

  /** An INTEGER for a field held as a JavaScript number: refused beyond ±(2^53 − 1). */
  int(what?: string): number {
    const start = this.#checkedInteger(what);
    const length = this.#pos - start;
    if (length <= 6) return this.#small(start, length);
    const value = this.#large(start);
    if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < BigInt(Number.MIN_SAFE_INTEGER)) {
      fault(
        'E_WIRE_INT_RANGE',
        `INTEGER ${value}${what ? ` (${what})` : ''} is out of range`,
        this.#tlvStart,
      );
    }
    return Number(value);
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

  /** Seven or eight content bytes: exact as a bigint, then held to OCaml's 63 bits. */
  #large(start: number): bigint {
    let value = BigInt.asIntN(8, BigInt(this.bytes[start] as number));
    for (let i = start + 1; i < this.#pos; i++) value = (value << 8n) | BigInt(this.bytes[i] as number);
    if (value < INT63_MIN || value > INT63_MAX)
      fault('E_WIRE_INT_RANGE', 'INTEGER: int overflow', this.#tlvStart);
    return value;
  }

  /** Up to six content bytes: exact in a number. */
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

/** A CHOICE position held an identifier the grammar does not list there. */
export function unknownTag(what: string, tag: number, at: number): never {
  const shown = (tag & 0xe0) === 0xa0 ? `[${tag & 0x1f}]` : `identifier ${tag.toString(16).padStart(2, '0')}`;
  return fault('E_WIRE_TAG', `unknown ${what} tag ${shown}`, at);
}

export function decodeUtf8(bytes: Uint8Array, start: number, end: number, at: number): string {
  // Short ASCII strings (names, netifs, bridges) are cheapest built directly; anything else goes
  // through the strict decoder, which never repairs: invalid UTF-8 is an error, not U+FFFD.
  if (end - start <= 16) {
    let text = '';
    let i = start;
    for (; i < end; i++) {
      const b = bytes[i] as number;
      if (b >= 0x80) break;
      text += String.fromCharCode(b);
    }
    if (i === end) return text;
  }
  try {
    return utf8Strict.decode(bytes.subarray(start, end));
  } catch {
    return fault('E_WIRE_UTF8', 'UTF8String is not valid UTF-8', at);
  }
}
