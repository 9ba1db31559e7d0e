// Reading everything path validation needs straight from a certificate's DER with src/wire's
// strict reader: the signed bytes, the signature and its algorithm, the names, the validity, the
// subject key, the extensions. Every client connection brings a fresh leaf, and @peculiar/x509
// takes milliseconds to build its typed objects; these fields take microseconds. Throws
// WireFault on bad DER (guard() turns it into a Result with the byte offset).

import { createHash } from 'node:crypto';
import { ALBATROSS_OID } from '../wire/cert.js';
import { fault } from '../wire/errors.js';
import { Reader } from '../wire/reader.js';
import { describeTag, TAG } from '../wire/tags.js';

const BIT_STRING = 0x03;

export interface RawExtension {
  /** Dotted object identifier. */
  readonly oid: string;
  readonly critical: boolean;
  /** The DER the extnValue OCTET STRING holds. */
  readonly value: Uint8Array;
}

export interface CertificateDer {
  /** The TBSCertificate exactly as signed. */
  readonly tbs: Uint8Array;
  /** Dotted OID of the signature algorithm, and its parameters' DER (empty when absent). */
  readonly signatureAlgorithm: string;
  readonly signatureParameters: Uint8Array;
  /** The signature bits (BIT STRING content without the unused-bits byte). */
  readonly signature: Uint8Array;
  /** DER SubjectPublicKeyInfo. */
  readonly publicKey: Uint8Array;
  /** DER of the issuer and subject Names. */
  readonly issuer: Uint8Array;
  readonly subject: Uint8Array;
  readonly notBefore: Date;
  readonly notAfter: Date;
  /** In certificate order; an OID appears at most once (RFC 5280 §4.2). */
  readonly extensions: readonly RawExtension[];
}

/**
 * The fields of an X.509 v1–v3 certificate (RFC 5280 §4.1). Beyond DER itself it requires what
 * RFC 5280 makes MUST: the inner signature algorithm equal to the outer one, times as
 * `YYMMDDHHMMSSZ` / `YYYYMMDDHHMMSS[.f]Z`, nothing after the extensions, no extension twice,
 * and every extension value (but the Albatross one, left to identity.ts) one well-formed DER
 * element.
 */
export function readCertificate(der: Uint8Array): CertificateDer {
  const outer = new Reader(der);
  const certificate = outer.enter(TAG.SEQUENCE, 'Certificate');
  outer.done();
  certificate.expect(TAG.SEQUENCE, 'TBSCertificate');
  const tbs = tlv(certificate);
  const tbsReader = certificate.content();
  const algorithm = certificate.enter(TAG.SEQUENCE, 'signatureAlgorithm');
  const algorithmDer = tlv(certificate);
  const signatureAlgorithm = decodeOid(algorithm.oid());
  const signatureParameters = algorithm.atEnd() ? new Uint8Array() : rest(algorithm);
  certificate.expect(BIT_STRING, 'signatureValue');
  const signature = bits(certificate, 'signatureValue');
  certificate.done();

  if (tbsReader.peek() === 0xa0) {
    const at = tbsReader.offset;
    const version = tbsReader.explicit(0, (r) => r.int('version'));
    if (version < 0 || version > 2) fault('E_WIRE_CERT', `unknown certificate version ${version + 1}`, at);
  }
  tbsReader.expect(TAG.INTEGER, 'serialNumber');
  const innerAt = tbsReader.offset;
  tbsReader.expect(TAG.SEQUENCE, 'signature');
  if (!sameBytes(tlv(tbsReader), algorithmDer)) {
    fault('E_WIRE_CERT', 'the signed signature algorithm differs from the outer one', innerAt);
  }
  tbsReader.expect(TAG.SEQUENCE, 'issuer');
  const issuer = tlv(tbsReader);
  const validity = tbsReader.enter(TAG.SEQUENCE, 'validity');
  const notBefore = readTime(validity, 'notBefore');
  const notAfter = readTime(validity, 'notAfter');
  validity.done();
  tbsReader.expect(TAG.SEQUENCE, 'subject');
  const subject = tlv(tbsReader);
  tbsReader.expect(TAG.SEQUENCE, 'subjectPublicKeyInfo');
  const publicKey = tlv(tbsReader);
  // issuerUniqueID [1] and subjectUniqueID [2] (IMPLICIT BIT STRINGs), then extensions [3].
  if (tbsReader.peek() === 0x81) tbsReader.next();
  if (tbsReader.peek() === 0x82) tbsReader.next();
  const extensions = tbsReader.peek() === 0xa3 ? tbsReader.explicit(3, readExtensions) : [];
  tbsReader.done();
  return {
    tbs,
    signatureAlgorithm,
    signatureParameters,
    signature,
    publicKey,
    issuer,
    subject,
    notBefore,
    notAfter,
    extensions,
  };
}

function readExtensions(reader: Reader): RawExtension[] {
  const list = reader.enter(TAG.SEQUENCE, 'Extensions');
  const extensions: RawExtension[] = [];
  const seen = new Set<string>();
  while (!list.atEnd()) {
    const at = list.offset;
    const extension = list.enter(TAG.SEQUENCE, 'Extension');
    const oid = decodeOid(extension.oid());
    const critical = extension.peek() === TAG.BOOLEAN ? extension.boolean('critical') : false;
    const value = extension.octets('extnValue');
    extension.done();
    if (seen.has(oid)) fault('E_WIRE_CERT', `extension ${oid} appears twice`, at);
    seen.add(oid);
    // The Albatross extension is decoded by identity.ts, which names what is wrong with it.
    const start = value.byteOffset - list.bytes.byteOffset;
    if (oid !== ALBATROSS_OID) checkWellFormed(list.bytes, start, start + value.length);
    extensions.push({ oid, critical, value });
  }
  return extensions;
}

/** Nesting deeper than this in an extension value is refused rather than walked. */
const MAX_DEPTH = 32;

/**
 * Requires `bytes[start, end)` to be exactly one DER element whose constructed parts are DER all
 * the way down (primitive contents are not interpreted): what RFC 5280 asks of an extnValue,
 * checked for every extension, read here or not.
 */
export function checkWellFormed(bytes: Uint8Array, start = 0, end = bytes.length): void {
  const reader = new Reader(bytes, start, end);
  walk(reader, 0);
  if (!reader.atEnd()) fault('E_WIRE_TRAILING', 'extension value holds more than one element', reader.offset);
}

function walk(reader: Reader, depth: number): void {
  if (depth > MAX_DEPTH) fault('E_WIRE_CERT', `nested more than ${MAX_DEPTH} deep`, reader.offset);
  const tag = reader.next();
  if ((tag & 0x20) === 0) return;
  const inner = reader.content();
  while (!inner.atEnd()) walk(inner, depth + 1);
}

/** SHA-1 of the subjectPublicKey bits (RFC 5280 §4.2.1.2 method 1), as @peculiar/x509 computes it. */
export function keyIdentifier(spki: Uint8Array): Uint8Array {
  const outer = new Reader(spki).enter(TAG.SEQUENCE);
  outer.next(); // the algorithm
  outer.expect(BIT_STRING);
  return new Uint8Array(createHash('sha1').update(bits(outer, 'subjectPublicKey')).digest());
}

/** KeyUsage flags as @peculiar's KeyUsageFlags number them: named bit i is flag 1 << i. */
export const KEY_USAGE = { digitalSignature: 1 << 0, keyCertSign: 1 << 5 } as const;

/** KeyUsage as flags (named bit i is flag 1 << i; bits past the ninth are ignored). */
export function readKeyUsage(value: Uint8Array): number {
  const reader = new Reader(value);
  reader.expect(BIT_STRING, 'KeyUsage');
  reader.done();
  const { start, end } = contentOf(reader);
  const unused = start < end ? (value[start] as number) : -1;
  if (unused < 0 || unused > 7 || (end - start === 1 && unused !== 0)) {
    fault('E_WIRE_CERT', 'KeyUsage is not a valid BIT STRING', reader.lastStart);
  }
  let flags = 0;
  for (let i = start + 1; i < end && i < start + 3; i++) {
    const byte = value[i] as number;
    for (let bit = 0; bit < 8; bit++) if (byte & (0x80 >> bit)) flags |= 1 << ((i - start - 1) * 8 + bit);
  }
  return flags;
}

export function readBasicConstraints(value: Uint8Array): { ca: boolean; pathLength: number | null } {
  const outer = new Reader(value);
  const sequence = outer.enter(TAG.SEQUENCE, 'BasicConstraints');
  outer.done();
  const ca = sequence.peek() === TAG.BOOLEAN ? sequence.boolean('cA') : false;
  const at = sequence.offset;
  const pathLength = sequence.peek() === TAG.INTEGER ? sequence.int('pathLenConstraint') : null;
  if (pathLength !== null && pathLength < 0)
    fault('E_WIRE_CERT', `negative pathLenConstraint ${pathLength}`, at);
  sequence.done();
  return { ca, pathLength };
}

export function readExtendedKeyUsage(value: Uint8Array): string[] {
  const outer = new Reader(value);
  const sequence = outer.enter(TAG.SEQUENCE, 'ExtKeyUsageSyntax');
  outer.done();
  const purposes: string[] = [];
  while (!sequence.atEnd()) purposes.push(decodeOid(sequence.oid()));
  return purposes;
}

export function decodeOid(bytes: Uint8Array): string {
  const arcs: (number | bigint)[] = [];
  let value = 0;
  // Arcs beyond 2^53 (a UUID under 2.25, as Petrel's token purpose is) go on in BigInt.
  let big: bigint | null = null;
  for (const byte of bytes) {
    if (big !== null) big = big * 128n + BigInt(byte & 0x7f);
    else if (value >= 2 ** 45) big = BigInt(value) * 128n + BigInt(byte & 0x7f);
    else value = value * 128 + (byte & 0x7f);
    if (byte & 0x80) continue;
    const arc = big ?? value;
    if (arcs.length === 0) {
      if (typeof arc === 'bigint') arcs.push(2, arc - 80n);
      else arcs.push(arc < 80 ? Math.floor(arc / 40) : 2, arc < 80 ? arc % 40 : arc - 80);
    } else arcs.push(arc);
    value = 0;
    big = null;
  }
  return arcs.join('.');
}

// ---------------------------------------------------------------------------------------------
// Time (RFC 5280 §4.1.2.5): UTCTime through 2049, GeneralizedTime after, always in UTC ("Z")
// with seconds. A GeneralizedTime fraction is accepted (older @peculiar/x509 CAs wrote one).

/** Reads the next element as a Time; digits are read from the bytes, the text built only for errors. */
function readTime(reader: Reader, what: string): Date {
  const at = reader.offset;
  const tag = reader.peek();
  if (tag !== TAG.UTC_TIME && tag !== TAG.GENERALIZED_TIME) {
    if (tag < 0) fault('E_WIRE_TRUNCATED', `missing ${what}`, at);
    fault('E_WIRE_TAG', `expected UTCTime or GeneralizedTime (${what}) but found ${describeTag(tag)}`, at);
  }
  reader.next();
  const { start, end } = contentOf(reader);
  const bytes = reader.bytes;
  let i = start;
  /** The next `n` digits as a number; -1 when they are not all there. */
  const digits = (n: number): number => {
    let value = 0;
    for (const stop = i + n; i < stop; i++) {
      const d = i < end ? (bytes[i] as number) - 0x30 : -1;
      if (d < 0 || d > 9) return -1;
      value = value * 10 + d;
    }
    return value;
  };
  const utc = tag === TAG.UTC_TIME;
  const year = digits(utc ? 2 : 4);
  const fields = [digits(2), digits(2), digits(2), digits(2), digits(2)];
  let millis = 0;
  if (!utc && bytes[i] === 0x2e && i < end) {
    i++;
    const from = i;
    const fraction = digits(Math.min(9, end - 1 - i));
    const length = i - from;
    if (fraction < 0 || length === 0) millis = -1;
    else millis = length <= 3 ? fraction * 10 ** (3 - length) : Math.floor(fraction / 10 ** (length - 3));
  }
  const text = (): string => JSON.stringify(Buffer.from(bytes.subarray(start, end)).toString('latin1'));
  if (year < 0 || millis < 0 || fields.includes(-1) || i !== end - 1 || bytes[i] !== 0x5a) {
    fault('E_WIRE_TIME', `invalid ${describeTag(tag)} ${text()} (${what})`, at);
  }
  const [month, day, hour, minute, second] = fields as [number, number, number, number, number];
  const date = new Date(0);
  date.setUTCFullYear(utc ? (year >= 50 ? 1900 + year : 2000 + year) : year, month - 1, day);
  date.setUTCHours(hour, minute, second, millis);
  if (month < 1 || month > 12 || date.getUTCDate() !== day || hour > 23 || minute > 59 || second > 59) {
    fault('E_WIRE_TIME', `impossible ${describeTag(tag)} ${text()} (${what})`, at);
  }
  return date;
}

// ---------------------------------------------------------------------------------------------

/** The whole TLV `reader` read last. */
function tlv(reader: Reader): Uint8Array {
  return reader.bytes.subarray(reader.lastStart, reader.offset);
}

/** What is left in `reader`, as raw bytes. */
function rest(reader: Reader): Uint8Array {
  const start = reader.offset;
  while (!reader.atEnd()) reader.next();
  return reader.bytes.subarray(start, reader.offset);
}

/** The content of the BIT STRING `reader` read last, which must use whole bytes. */
function bits(reader: Reader, what: string): Uint8Array {
  const { start, end } = contentOf(reader);
  if (start === end || reader.bytes[start] !== 0) {
    fault('E_WIRE_CERT', `${what} is not a BIT STRING of whole bytes`, reader.lastStart);
  }
  return reader.bytes.subarray(start + 1, end);
}

/** The content bounds of the TLV `reader` read last (the reader checked its length form). */
function contentOf(reader: Reader): { start: number; end: number } {
  const first = reader.bytes[reader.lastStart + 1] as number;
  const header = first < 0x80 ? 2 : 2 + (first & 0x7f);
  return { start: reader.lastStart + header, end: reader.offset };
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
