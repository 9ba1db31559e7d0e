// Reading certificates without @peculiar/x509 (der.ts, names.ts, certs.ts): the fields agree with
// @peculiar/x509's on real certificates, and every malformation RFC 5280 rules out is refused
// with what was wrong and the byte offset where it was found.

import { describe, expect, it } from 'vitest';
import { parseCertificate } from '../../src/tls/certs.js';
import { checkWellFormed, readBasicConstraints, readCertificate, readKeyUsage } from '../../src/tls/der.js';
import { x509 } from '../../src/tls/x509.js';
import { guard } from '../../src/wire/errors.js';
import { enc } from '../../src/wire/writer.js';
import { CN, certificate, extension, generalizedTime, name, oid, raw, utcTime } from './certificate-der.js';
import { delegate, der, forge, leaf, rootCa } from './helpers.js';

/** The WireError `read` throws, with its offset (fails the test when it reads the bytes). */
function failure(read: () => unknown) {
  const result = guard(read);
  if (result.ok) throw new Error('expected the bytes to be refused');
  return result.error;
}

const refusal = (bytes: Uint8Array) => failure(() => readCertificate(bytes));

describe('certificates read alike by der.ts and @peculiar/x509', () => {
  it('names, validity, constraints and CN of a delegation chain', async () => {
    const root = await rootCa();
    const alice = await delegate(root, 'alice');
    const client = await leaf(alice, 'web');
    for (const cert of [...client.chain, root.chain[0] as x509.X509Certificate]) {
      const read = parseCertificate(der(cert));
      if (!read.ok) throw new Error(read.error.message);
      const c = read.value;
      expect(c.subject).toBe(cert.subject);
      expect(c.issuer).toBe(cert.issuer);
      expect(c.notBefore).toEqual(cert.notBefore);
      expect(c.notAfter).toEqual(cert.notAfter);
      expect(c.commonName).toBe(cert.subjectName.getField('CN')[0] ?? null);
      expect(c.selfIssued).toBe(cert.subject === cert.issuer);
      const bc = cert.getExtension(x509.BasicConstraintsExtension);
      expect(c.facts.ca).toBe(bc?.ca ?? false);
      expect(c.facts.keyUsage).toBe(cert.getExtension(x509.KeyUsagesExtension)?.usages ?? null);
    }
  });

  it('a certificate forged by @peculiar/x509 itself (validity with milliseconds, no version quirks)', async () => {
    const forged = await forge({ cn: 'odd', pathLength: 3 });
    const cert = forged.chain[0] as x509.X509Certificate;
    const read = parseCertificate(der(cert));
    if (!read.ok) throw new Error(read.error.message);
    expect(read.value.facts).toMatchObject({ ca: true, pathLength: 3 });
    expect(read.value.notAfter).toEqual(cert.notAfter);
  });

  it('the assembled default certificate reads', () => {
    const fields = readCertificate(certificate());
    expect(fields.notBefore.toISOString()).toBe('2025-01-01T00:00:00.000Z');
    expect(fields.notAfter.toISOString()).toBe('2035-01-01T00:00:00.000Z');
    expect(fields.extensions).toEqual([{ oid: '2.5.29.19', critical: true, value: Uint8Array.of(0x30, 0) }]);
  });
});

describe('the certificate structure', () => {
  it('truncated, or with bytes after it', () => {
    const good = certificate();
    expect(refusal(good.subarray(0, good.length - 1))).toMatchObject({
      code: 'E_WIRE_TRUNCATED',
      message: expect.stringMatching(/exceeds the \d+ bytes available at byte 1$/),
    });
    expect(refusal(certificate({ trailing: Uint8Array.of(0) }))).toMatchObject({
      code: 'E_WIRE_TRAILING',
      message: `trailing bytes (1) at byte ${good.length}`,
    });
    expect(refusal(new Uint8Array())).toMatchObject({ code: 'E_WIRE_TRUNCATED' });
  });

  it('wrong tags where the grammar says what comes', () => {
    const set = certificate();
    set[0] = 0x31;
    expect(refusal(set)).toMatchObject({
      code: 'E_WIRE_TAG',
      message: 'expected Certificate (SEQUENCE) but found SET at byte 0',
    });
    expect(refusal(certificate({ serial: enc.utf8('1') }))).toMatchObject({
      code: 'E_WIRE_TAG',
      message: expect.stringMatching(/^expected serialNumber \(INTEGER\) but found UTF8String at byte \d+$/),
    });
    expect(refusal(certificate({ issuer: enc.set([]) })).message).toMatch(/^expected issuer \(SEQUENCE\)/);
    const noKey = certificate({ publicKey: raw([]), afterKey: [], extensions: null });
    expect(refusal(noKey)).toMatchObject({
      code: 'E_WIRE_TRUNCATED',
      message: expect.stringMatching(/^missing subjectPublicKeyInfo/),
    });
  });

  it('anything after the extensions, or an element out of place', () => {
    expect(refusal(certificate({ afterKey: [enc.integer(5)] }))).toMatchObject({ code: 'E_WIRE_TRAILING' });
    const twice = certificate({ afterKey: [enc.explicit(3, enc.sequence([]))] });
    expect(refusal(twice)).toMatchObject({ code: 'E_WIRE_TRAILING' });
    // issuerUniqueID and subjectUniqueID, in order, are allowed.
    const ids = certificate({
      afterKey: [enc.primitive(0x81, Uint8Array.of(0)), enc.primitive(0x82, Uint8Array.of(0))],
    });
    expect(readCertificate(ids).extensions).toHaveLength(1);
  });

  it('versions other than v1–v3, and a signed algorithm other than the outer one', () => {
    const v4 = certificate({ version: enc.explicit(0, enc.integer(3)) });
    const error = refusal(v4);
    expect(error).toMatchObject({
      code: 'E_WIRE_CERT',
      message: expect.stringMatching(/^unknown certificate version 4 at byte \d+$/),
    });
    expect(v4[error.details?.offset as number]).toBe(0xa0);
    expect(readCertificate(certificate({ version: null })).subject).toEqual(
      readCertificate(certificate()).subject,
    );
    const rsa = enc.sequence([oid('1.2.840.113549.1.1.11'), enc.null()]);
    expect(refusal(certificate({ innerAlgorithm: rsa }))).toMatchObject({
      code: 'E_WIRE_CERT',
      message: expect.stringMatching(
        /^the signed signature algorithm differs from the outer one at byte \d+$/,
      ),
    });
  });

  it('a signature or key BIT STRING with unused bits', () => {
    const signature = enc.primitive(0x03, Uint8Array.of(3, 0xf8));
    expect(refusal(certificate({ signature }))).toMatchObject({
      code: 'E_WIRE_CERT',
      message: expect.stringMatching(/^signatureValue is not a BIT STRING of whole bytes/),
    });
    expect(refusal(certificate({ signature: enc.primitive(0x03, new Uint8Array()) })).code).toBe(
      'E_WIRE_CERT',
    );
  });
});

describe('validity times (RFC 5280 §4.1.2.5)', () => {
  const at = (notBefore: ReturnType<typeof utcTime>) =>
    certificate({ validity: enc.sequence([notBefore, utcTime('350101000000Z')]) });

  it('UTCTime 1950–2049 and GeneralizedTime, with an optional fraction', () => {
    expect(readCertificate(at(utcTime('500101000000Z'))).notBefore.toISOString()).toBe(
      '1950-01-01T00:00:00.000Z',
    );
    expect(readCertificate(at(utcTime('491231235959Z'))).notBefore.toISOString()).toBe(
      '2049-12-31T23:59:59.000Z',
    );
    const g = readCertificate(at(generalizedTime('20500101000000.25Z'))).notBefore;
    expect(g.toISOString()).toBe('2050-01-01T00:00:00.250Z');
    const nine = readCertificate(at(generalizedTime('20500101000000.123456789Z'))).notBefore;
    expect(nine.toISOString()).toBe('2050-01-01T00:00:00.123Z');
    expect(readCertificate(at(generalizedTime('20240229120000Z'))).notBefore.toISOString()).toBe(
      '2024-02-29T12:00:00.000Z',
    );
    expect(readCertificate(at(generalizedTime('00050101000000Z'))).notBefore.getUTCFullYear()).toBe(5);
  });

  it.each([
    ['without seconds', utcTime('2501010000Z')],
    ['without Z', utcTime('250101000000')],
    ['with a zone offset', utcTime('250101000000+0100')],
    ['GeneralizedTime without seconds', generalizedTime('205001010000Z')],
    ['GeneralizedTime in local time', generalizedTime('20500101000000')],
    ['an empty fraction', generalizedTime('20500101000000.Z')],
    ['a fraction of ten digits', generalizedTime('20500101000000.1234567890Z')],
    ['a fraction in a UTCTime', utcTime('250101000000.5Z')],
    ['a sign in a digit', utcTime('25-101000000Z')],
    ['an empty time', utcTime('')],
  ])('refused: %s', (_what, time) => {
    expect(refusal(at(time))).toMatchObject({
      code: 'E_WIRE_TIME',
      message: expect.stringMatching(/^invalid (UTCTime|GeneralizedTime) ".*" \(notBefore\) at byte \d+$/),
    });
  });

  it.each([
    ['February 30', utcTime('250230000000Z')],
    ['February 29 of 2025', utcTime('250229000000Z')],
    ['day 0', utcTime('250100000000Z')],
    ['month 13', utcTime('251301000000Z')],
    ['hour 24', utcTime('250101240000Z')],
    ['second 60', generalizedTime('20500101000060Z')],
  ])('refused: %s', (_what, time) => {
    expect(refusal(at(time))).toMatchObject({
      code: 'E_WIRE_TIME',
      message: expect.stringMatching(/^impossible/),
    });
  });

  it('a time of another type, or a missing one', () => {
    expect(refusal(at(enc.utf8('250101000000Z'))).message).toMatch(
      /^expected UTCTime or GeneralizedTime \(notBefore\) but found UTF8String at byte \d+$/,
    );
    const one = certificate({ validity: enc.sequence([utcTime('250101000000Z')]) });
    expect(refusal(one)).toMatchObject({
      code: 'E_WIRE_TRUNCATED',
      message: expect.stringMatching(/^missing notAfter/),
    });
  });
});

describe('extensions', () => {
  it('an extension twice is refused, wherever the second one is', () => {
    const bc = extension('2.5.29.19', enc.sequence([enc.boolean(true)]), true);
    const ku = extension('2.5.29.15', raw([0x03, 0x02, 0x01, 0x06]), true);
    expect(refusal(certificate({ extensions: [bc, ku, bc] }))).toMatchObject({
      code: 'E_WIRE_CERT',
      message: expect.stringMatching(/^extension 2\.5\.29\.19 appears twice at byte \d+$/),
    });
  });

  it('50,000 extensions are read in linear time (duplicates found through a set)', () => {
    const many = Array.from({ length: 50_000 }, (_, i) => extension(`1.2.3.${i}`, enc.null()));
    const bytes = certificate({ extensions: many });
    const started = performance.now();
    expect(readCertificate(bytes).extensions).toHaveLength(50_000);
    expect(performance.now() - started).toBeLessThan(3000);
  });

  it('every extension value is one DER element, DER all the way down', () => {
    const two = extension('1.2.3.4', Uint8Array.of(0x05, 0x00, 0x05, 0x00));
    expect(refusal(certificate({ extensions: [two] }))).toMatchObject({
      code: 'E_WIRE_TRAILING',
      message: expect.stringMatching(/^extension value holds more than one element at byte \d+$/),
    });
    const ber = extension('2.5.29.17', Uint8Array.of(0x30, 0x81, 0x02, 0x05, 0x00));
    expect(refusal(certificate({ extensions: [ber] })).code).toBe('E_WIRE_LENGTH');
    const inner = extension('2.5.29.17', Uint8Array.of(0x30, 0x03, 0x30, 0x05, 0x00));
    expect(refusal(certificate({ extensions: [inner] })).code).toBe('E_WIRE_TRUNCATED');
    const empty = extension('1.2.3.4', new Uint8Array());
    expect(refusal(certificate({ extensions: [empty] })).code).toBe('E_WIRE_TRUNCATED');
    // Primitive contents are not interpreted.
    expect(
      readCertificate(certificate({ extensions: [extension('1.2.3.4', Uint8Array.of(0x04, 0x01, 0xff))] }))
        .extensions,
    ).toHaveLength(1);
  });

  it('nesting deeper than 32 is refused', () => {
    let value = Uint8Array.of(0x05, 0x00);
    for (let i = 0; i < 40; i++) value = Uint8Array.of(0x30, value.length, ...value);
    expect(() => checkWellFormed(value)).toThrow(/nested more than 32 deep/);
  });

  it('the Albatross extension is left to identity.ts, which names what is wrong with it', () => {
    const albatross = extension('1.3.6.1.4.1.49836.42', Uint8Array.of(0x30, 0x01, 0x00));
    expect(readCertificate(certificate({ extensions: [albatross] })).extensions[0]?.oid).toBe(
      '1.3.6.1.4.1.49836.42',
    );
  });

  it('key usage and basic constraints values', () => {
    const ku = (...bytes: number[]) => failure(() => readKeyUsage(Uint8Array.from(bytes))).message;
    const bc = (...bytes: number[]) => failure(() => readBasicConstraints(Uint8Array.from(bytes))).message;
    expect(ku(0x03, 0x02, 0x08, 0x80)).toBe('KeyUsage is not a valid BIT STRING at byte 0');
    expect(ku(0x03, 0x00)).toBe('KeyUsage is not a valid BIT STRING at byte 0');
    expect(ku(0x03, 0x01, 0x01)).toBe('KeyUsage is not a valid BIT STRING at byte 0');
    expect(readKeyUsage(Uint8Array.of(0x03, 0x01, 0x00))).toBe(0);
    expect(ku(0x04, 0x01, 0x00)).toBe('expected KeyUsage (identifier 03) but found OCTET STRING at byte 0');
    expect(ku(0x03, 0x02, 0x00, 0x80, 0x00)).toBe('trailing bytes (1) at byte 4');
    expect(ku(0x03, 0x05, 0x00)).toBe('length 5 exceeds the 1 bytes available at byte 1');
    expect(bc(0x30, 0x03, 0x02, 0x01, 0xff)).toBe('negative pathLenConstraint -1 at byte 2');
    expect(bc(0x30, 0x03, 0x01, 0x01, 0xff, 0x00)).toBe('trailing bytes (1) at byte 5');
    expect(bc(0x30, 0x03, 0x04, 0x01, 0xff)).toBe('trailing bytes (3) at byte 2');
    expect(bc(0x30, 0x02, 0x01, 0x01)).toBe('length 1 exceeds the 0 bytes available at byte 3');
  });

  it('parseCertificate names the malformed extension and where it is in the certificate', () => {
    const bad = extension('2.5.29.15', raw([0x03, 0x02, 0x09, 0x80]), true);
    const bytes = certificate({ extensions: [bad] });
    const read = parseCertificate(bytes);
    expect(read).toMatchObject({
      ok: false,
      error: {
        code: 'E_TLS_CERT_INVALID',
        message: expect.stringMatching(
          /^certificate CN=web has a malformed extension 2\.5\.29\.15: KeyUsage is not a valid BIT STRING at byte \d+$/,
        ),
      },
    });
    const offset = Number(/at byte (\d+)$/.exec(read.ok ? '' : read.error.message)?.[1]);
    expect(bytes[offset]).toBe(0x03);
    expect(bytes[offset + 2]).toBe(0x09);
  });
});

describe('names in parseCertificate', () => {
  it('a malformed subject or issuer Name is refused, with its offset in the certificate', () => {
    const emptyRdn = certificate({ subject: enc.sequence([enc.set([])]) });
    const read = parseCertificate(emptyRdn);
    expect(read).toMatchObject({
      ok: false,
      error: {
        code: 'E_TLS_CERT_INVALID',
        message: expect.stringMatching(
          /^malformed subject name: empty RelativeDistinguishedName at byte \d+$/,
        ),
      },
    });
    const offset = Number(/at byte (\d+)$/.exec(read.ok ? '' : read.error.message)?.[1]);
    expect(emptyRdn[offset]).toBe(0x31);
    const issuer = parseCertificate(certificate({ issuer: enc.sequence([enc.integer(1)]) }));
    expect(issuer).toMatchObject({
      ok: false,
      error: {
        message: expect.stringMatching(/^malformed issuer name: expected RelativeDistinguishedName \(SET\)/),
      },
    });
  });

  it('a CN that is not a string, or not valid in its string type', () => {
    const number = parseCertificate(certificate({ subject: name([[CN, enc.integer(7)]]) }));
    expect(!number.ok && number.error.message).toMatch(
      /^malformed subject name: CN is not a character string \(INTEGER\)/,
    );
    const utf8 = parseCertificate(
      certificate({ subject: name([[CN, enc.primitive(0x0c, Uint8Array.of(0xc3))]]) }),
    );
    expect(!utf8.ok && utf8.error.message).toMatch(/UTF8String is not valid UTF-8/);
    const bmp = parseCertificate(
      certificate({ subject: name([[CN, enc.primitive(0x1e, Uint8Array.of(0, 0x61, 0))]]) }),
    );
    expect(!bmp.ok && bmp.error.message).toMatch(/a BMPString of 3 bytes/);
  });
});
