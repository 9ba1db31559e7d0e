// Distinguished names read by names.ts: the first CN in every string type a CA may use, the text
// @peculiar/x509 prints for the same Name, and matching an issuer to a subject encoded otherwise.

import { describe, expect, it } from 'vitest';
import { checkName, commonName, nameText, sameName } from '../../src/tls/names.js';
import { x509 } from '../../src/tls/x509.js';
import { guard } from '../../src/wire/errors.js';
import { enc, toBytes } from '../../src/wire/writer.js';
import { CN, name } from './certificate-der.js';

const bytes = (...rdns: Parameters<typeof name>) => toBytes(name(...rdns));
const utf16 = (text: string) => Uint8Array.from(Buffer.from(text, 'utf16le').swap16());
const failure = (read: () => unknown) => {
  const result = guard(read);
  if (result.ok) throw new Error('expected the Name to be refused');
  return result.error;
};

describe('the CN', () => {
  it.each([
    ['PrintableString', enc.primitive(0x13, Buffer.from('web'))],
    ['UTF8String', enc.utf8('web')],
    ['IA5String', enc.primitive(0x16, Buffer.from('web'))],
    ['TeletexString', enc.primitive(0x14, Buffer.from('web'))],
    ['BMPString', enc.primitive(0x1e, utf16('web'))],
    ['UniversalString', enc.primitive(0x1c, Uint8Array.of(0, 0, 0, 0x77, 0, 0, 0, 0x65, 0, 0, 0, 0x62))],
  ])('read from a %s', (_type, value) => {
    expect(commonName(bytes([[CN, value]]))).toBe('web');
  });

  it('the first CN in RDN order; absent is null, empty is ""', () => {
    expect(commonName(bytes([['2.5.4.10', 'org']], [[CN, 'first']], [[CN, 'second']]))).toBe('first');
    expect(commonName(bytes([['2.5.4.10', 'org']]))).toBe(null);
    expect(commonName(toBytes(enc.sequence([])))).toBe(null);
    expect(commonName(bytes([[CN, '']]))).toBe('');
    expect(commonName(bytes([[CN, enc.utf8('héllo')]]))).toBe('héllo');
  });

  it('a CN that is not a character string, or malformed in its type', () => {
    expect(failure(() => commonName(bytes([[CN, enc.integer(1)]])))).toMatchObject({
      code: 'E_WIRE_CERT',
      message: 'CN is not a character string (INTEGER) at byte 11',
    });
    expect(failure(() => commonName(bytes([[CN, enc.primitive(0x0c, Uint8Array.of(0xff))]]))).code).toBe(
      'E_WIRE_UTF8',
    );
    expect(failure(() => commonName(bytes([[CN, enc.primitive(0x1e, Uint8Array.of(0))]]))).message).toBe(
      'a BMPString of 1 bytes at byte 11',
    );
    const surrogate = enc.primitive(0x1c, Uint8Array.of(0, 0, 0xd8, 0));
    expect(failure(() => commonName(bytes([[CN, surrogate]]))).message).toMatch(/not a Unicode scalar value/);
  });
});

describe('the Name structure', () => {
  it.each([
    ['not a SEQUENCE', toBytes(enc.set([])), 'expected Name (SEQUENCE) but found SET at byte 0'],
    ['an empty RDN', toBytes(enc.sequence([enc.set([])])), 'empty RelativeDistinguishedName at byte 2'],
    [
      'an RDN that is not a SET',
      toBytes(enc.sequence([enc.sequence([])])),
      'expected RelativeDistinguishedName (SET) but found SEQUENCE at byte 2',
    ],
    [
      'an attribute without a value',
      toBytes(enc.sequence([enc.set([enc.sequence([enc.primitive(0x06, Uint8Array.of(0x55, 4, 3))])])])),
      'value ended where another element was expected at byte 11',
    ],
    [
      'an attribute with two values',
      toBytes(
        enc.sequence([
          enc.set([
            enc.sequence([enc.primitive(0x06, Uint8Array.of(0x55, 4, 3)), enc.utf8('a'), enc.utf8('b')]),
          ]),
        ]),
      ),
      'trailing bytes (3) at byte 14',
    ],
    ['trailing bytes', Uint8Array.of(0x30, 0x00, 0x00), 'trailing bytes (1) at byte 2'],
    ['truncated', Uint8Array.of(0x30, 0x02, 0x31), 'length 2 exceeds the 1 bytes available at byte 1'],
  ])('refused: %s', (_what, der, message) => {
    expect(failure(() => checkName(der)).message).toBe(message);
  });
});

describe('the text of a Name, as @peculiar/x509 prints it', () => {
  it.each([
    ['one CN', bytes([[CN, 'alice']])],
    [
      'several RDNs',
      bytes([['2.5.4.6', 'CH']], [['2.5.4.10', enc.utf8('Ex, "quoted"; <more>')]], [[CN, ' web ']]),
    ],
    [
      'a multi-valued RDN',
      bytes([
        [CN, 'a'],
        ['2.5.4.11', 'b'],
      ]),
    ],
    ['an attribute type without a short name', bytes([['1.2.3.4', 'x']])],
    ['a value that is not a string', bytes([['1.2.3.4', enc.integer(5)]])],
    ['a leading #', bytes([[CN, enc.utf8('#x')]])],
    ['the empty Name', toBytes(enc.sequence([]))],
  ])('%s', (_what, der) => {
    expect(nameText(der)).toBe(new x509.Name(der).toString());
  });

  it('a malformed string prints as hex instead of failing', () => {
    expect(nameText(bytes([[CN, enc.primitive(0x0c, Uint8Array.of(0xff))]]))).toBe('CN=#0c01ff');
  });

  it('names match when their bytes or their text do', () => {
    const printable = bytes([[CN, 'ca']]);
    const utf8 = bytes([[CN, enc.utf8('ca')]]);
    expect(sameName(printable, printable.slice())).toBe(true);
    expect(sameName(printable, utf8)).toBe(true);
    expect(sameName(printable, bytes([[CN, 'cb']]))).toBe(false);
    expect(sameName(printable, bytes([['2.5.4.10', 'ca']]))).toBe(false);
  });
});
