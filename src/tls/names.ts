// Distinguished names read from their DER: the first CN (identity derivation reads it) and the
// one-line text @peculiar/x509 prints ("CN=alice, O=example"), for messages and for matching an
// issuer name to a subject name when their bytes differ. Throws WireFault on bad DER, with
// offsets within the Name; nameText and sameName never throw on a Name checkName accepted.

import { fault } from '../wire/errors.js';
import { decodeUtf8, Reader } from '../wire/reader.js';
import { describeTag, TAG } from '../wire/tags.js';
import { decodeOid } from './der.js';

/** One AttributeTypeAndValue: the dotted type, and the value's identifier and content. */
interface Attribute {
  readonly type: string;
  readonly tag: number;
  readonly value: Uint8Array;
  /** The whole value TLV (printed as #hex when it is not a string). */
  readonly element: Uint8Array;
  /** Where the value starts in the Name, for errors. */
  readonly at: number;
}

const CN = '2.5.4.3';

/** Name ::= SEQUENCE OF RelativeDistinguishedName (a non-empty SET OF AttributeTypeAndValue). */
function readName(der: Uint8Array): Attribute[][] {
  const outer = new Reader(der);
  const name = outer.enter(TAG.SEQUENCE, 'Name');
  outer.done();
  const rdns: Attribute[][] = [];
  while (!name.atEnd()) {
    const at = name.offset;
    const set = name.enter(TAG.SET, 'RelativeDistinguishedName');
    if (set.atEnd()) fault('E_WIRE_CERT', 'empty RelativeDistinguishedName', at);
    const rdn: Attribute[] = [];
    while (!set.atEnd()) {
      const pair = set.enter(TAG.SEQUENCE, 'AttributeTypeAndValue');
      const type = decodeOid(pair.oid());
      const tag = pair.next();
      const content = pair.content();
      rdn.push({
        type,
        tag,
        value: pair.bytes.subarray(content.offset, pair.offset),
        element: pair.bytes.subarray(pair.lastStart, pair.offset),
        at: pair.lastStart,
      });
      pair.done();
    }
    rdns.push(rdn);
  }
  return rdns;
}

/** Requires `der` to be a well-formed Name. */
export function checkName(der: Uint8Array): void {
  readName(der);
}

/**
 * The first CN of a Name, null when it has none (absent is not the same as ""). The whole Name
 * must be well-formed; the CN must be a well-formed character string.
 */
export function commonName(der: Uint8Array): string | null {
  for (const rdn of readName(der)) {
    for (const attribute of rdn) {
      if (attribute.type !== CN) continue;
      const text = stringValue(attribute);
      if (text === null)
        fault('E_WIRE_CERT', `CN is not a character string (${describeTag(attribute.tag)})`, attribute.at);
      return text;
    }
  }
  return null;
}

/** The short names @peculiar/x509 prints; other types print as their dotted OID. */
const SHORT: Readonly<Record<string, string>> = {
  '2.5.4.3': 'CN',
  '2.5.4.7': 'L',
  '2.5.4.8': 'ST',
  '2.5.4.10': 'O',
  '2.5.4.11': 'OU',
  '2.5.4.6': 'C',
  '0.9.2342.19200300.100.1.25': 'DC',
  '1.2.840.113549.1.9.1': 'E',
  '2.5.4.42': 'G',
  '2.5.4.43': 'I',
  '2.5.4.4': 'SN',
  '2.5.4.12': 'T',
};

/** `CN=web`, RDNs joined by ", " and multi-valued ones by "+", values escaped as RFC 4514 says. */
export function nameText(der: Uint8Array): string {
  return readName(der)
    .map((rdn) =>
      rdn
        .map((a) => {
          const text = printable(a);
          const value = text === null ? `#${Buffer.from(a.element).toString('hex')}` : escapeValue(text);
          return `${SHORT[a.type] ?? a.type}=${value}`;
        })
        .join('+'),
    )
    .join(', ');
}

/**
 * Whether two Names are the same: the same bytes, or the same text (a CA's subject may be
 * re-encoded in its children, e.g. PrintableString as UTF8String). Chain building links issuers
 * by name only to choose candidates; the signature decides.
 */
export function sameName(a: Uint8Array, b: Uint8Array): boolean {
  return equalBytes(a, b) || nameText(a) === nameText(b);
}

/** The text of a value for printing: null (printed as #hex) when it is not a well-formed string. */
function printable(attribute: Attribute): string | null {
  try {
    return stringValue(attribute);
  } catch {
    return null;
  }
}

function escapeValue(text: string): string {
  return text
    .replace(/([,+"\\<>;])/g, '\\$1')
    .replace(/^([ #])/, '\\$1')
    .replace(/( )$/, '\\$1')
    .replace(/[\r\n\t]/g, (c) => `\\${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
}

const STRING = {
  UTF8: TAG.UTF8,
  NUMERIC: 0x12,
  PRINTABLE: 0x13,
  TELETEX: 0x14,
  IA5: 0x16,
  VISIBLE: 0x1a,
  UNIVERSAL: 0x1c,
  BMP: 0x1e,
} as const;

/** The text of a character-string value; null for any other type. Throws on malformed text. */
function stringValue({ tag, value, at }: Attribute): string | null {
  switch (tag) {
    case STRING.UTF8:
      return decodeUtf8(value, 0, value.length, at);
    case STRING.NUMERIC:
    case STRING.PRINTABLE:
    case STRING.TELETEX:
    case STRING.IA5:
    case STRING.VISIBLE:
      return Buffer.from(value).toString('latin1');
    case STRING.BMP:
      return bmp(value, at);
    case STRING.UNIVERSAL:
      return wide(value, at);
    default:
      return null;
  }
}

/** BMPString: UTF-16 big-endian code units. */
function bmp(value: Uint8Array, at: number): string {
  if (value.length % 2 !== 0) fault('E_WIRE_CERT', `a BMPString of ${value.length} bytes`, at);
  let text = '';
  for (let i = 0; i < value.length; i += 2) {
    text += String.fromCharCode(((value[i] as number) << 8) | (value[i + 1] as number));
  }
  return text;
}

/** UniversalString: UTF-32 big-endian. */
function wide(value: Uint8Array, at: number): string {
  if (value.length % 4 !== 0) fault('E_WIRE_CERT', `a UniversalString of ${value.length} bytes`, at);
  let text = '';
  for (let i = 0; i < value.length; i += 4) {
    const code =
      (value[i] as number) * 0x1000000 +
      (((value[i + 1] as number) << 16) | ((value[i + 2] as number) << 8) | (value[i + 3] as number));
    if (code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) {
      fault(
        'E_WIRE_CERT',
        `UniversalString character ${code.toString(16)} is not a Unicode scalar value`,
        at,
      );
    }
    text += String.fromCodePoint(code);
  }
  return text;
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.compare(a, b) === 0;
}
