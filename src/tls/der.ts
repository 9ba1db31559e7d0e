// Reading what path validation needs straight from a certificate's DER with src/wire's strict
// reader: the signed bytes, the signature and its algorithm, the subject key, the extensions.
// Every client connection brings a fresh leaf, and @peculiar/x509 takes milliseconds to build its
// typed extension objects; these few fields take microseconds. Throws WireFault on bad DER.

import { createHash } from 'node:crypto';
import { Reader } from '../wire/reader.js';
import { TAG } from '../wire/tags.js';

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
  readonly extensions: readonly RawExtension[];
}

export function readCertificate(der: Uint8Array): CertificateDer {
  const certificate = new Reader(der).enter(TAG.SEQUENCE);
  certificate.expect(TAG.SEQUENCE);
  const tbs = tlv(certificate);
  const tbsReader = certificate.content();
  const algorithm = certificate.enter(TAG.SEQUENCE);
  const signatureAlgorithm = decodeOid(algorithm.oid());
  const signatureParameters = algorithm.atEnd() ? new Uint8Array() : rest(algorithm);
  certificate.expect(BIT_STRING);
  const signature = bits(certificate);
  certificate.done();

  if (tbsReader.peek() === 0xa0) tbsReader.next(); // version
  tbsReader.next(); // serial
  tbsReader.next(); // signature (checked equal by the library that verifies, not needed here)
  tbsReader.expect(TAG.SEQUENCE);
  const issuer = tlv(tbsReader);
  tbsReader.next(); // validity
  tbsReader.expect(TAG.SEQUENCE);
  const subject = tlv(tbsReader);
  tbsReader.expect(TAG.SEQUENCE);
  const publicKey = tlv(tbsReader);
  const extensions: RawExtension[] = [];
  while (!tbsReader.atEnd()) {
    const tag = tbsReader.next();
    if (tag !== 0xa3) continue; // issuerUniqueID [1], subjectUniqueID [2]
    const list = tbsReader.content().enter(TAG.SEQUENCE);
    while (!list.atEnd()) {
      const extension = list.enter(TAG.SEQUENCE);
      const oid = decodeOid(extension.oid());
      const critical = extension.peek() === TAG.BOOLEAN ? extension.boolean() : false;
      const value = extension.octets();
      extension.done();
      extensions.push({ oid, critical, value });
    }
  }
  return { tbs, signatureAlgorithm, signatureParameters, signature, publicKey, issuer, subject, extensions };
}

/** SHA-1 of the subjectPublicKey bits (RFC 5280 §4.2.1.2 method 1), as @peculiar/x509 computes it. */
export function keyIdentifier(spki: Uint8Array): Uint8Array {
  const outer = new Reader(spki).enter(TAG.SEQUENCE);
  outer.next(); // the algorithm
  outer.expect(BIT_STRING);
  return new Uint8Array(createHash('sha1').update(bits(outer)).digest());
}

/** KeyUsage as @peculiar's KeyUsageFlags (named bit i is flag 1 << i). */
export function readKeyUsage(value: Uint8Array): number {
  const reader = new Reader(value);
  reader.expect(BIT_STRING);
  reader.done();
  const { start, end } = contentOf(reader);
  let flags = 0;
  for (let i = start + 1; i < end && i < start + 3; i++) {
    const byte = value[i] as number;
    for (let bit = 0; bit < 8; bit++) if (byte & (0x80 >> bit)) flags |= 1 << ((i - start - 1) * 8 + bit);
  }
  return flags;
}

export function readBasicConstraints(value: Uint8Array): { ca: boolean; pathLength: number | null } {
  const outer = new Reader(value);
  const sequence = outer.enter(TAG.SEQUENCE);
  outer.done();
  const ca = sequence.peek() === TAG.BOOLEAN ? sequence.boolean() : false;
  const pathLength = sequence.peek() === TAG.INTEGER ? sequence.int() : null;
  sequence.done();
  return { ca, pathLength };
}

export function readExtendedKeyUsage(value: Uint8Array): string[] {
  const outer = new Reader(value);
  const sequence = outer.enter(TAG.SEQUENCE);
  outer.done();
  const purposes: string[] = [];
  while (!sequence.atEnd()) purposes.push(decodeOid(sequence.oid()));
  return purposes;
}

export function decodeOid(bytes: Uint8Array): string {
  const arcs: number[] = [];
  let value = 0;
  for (const byte of bytes) {
    value = value * 128 + (byte & 0x7f);
    if (byte & 0x80) continue;
    if (arcs.length === 0)
      arcs.push(value < 80 ? Math.floor(value / 40) : 2, value < 80 ? value % 40 : value - 80);
    else arcs.push(value);
    value = 0;
  }
  return arcs.join('.');
}

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

/** The content of the BIT STRING `reader` read last, without the unused-bits byte. */
function bits(reader: Reader): Uint8Array {
  const { start, end } = contentOf(reader);
  return reader.bytes.subarray(start + 1, end);
}

/** The content bounds of the TLV `reader` read last (the reader checked its length form). */
function contentOf(reader: Reader): { start: number; end: number } {
  const first = reader.bytes[reader.lastStart + 1] as number;
  const header = first < 0x80 ? 2 : 2 + (first & 0x7f);
  return { start: reader.lastStart + header, end: reader.offset };
}
