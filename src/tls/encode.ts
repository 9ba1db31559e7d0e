// X.509 certificates encoded and signed here: DER from src/wire's writer, signatures from
// node:crypto, both synchronous. @peculiar/x509's generator spends milliseconds per certificate in
// schema machinery and WebCrypto round trips, and every remote command signs a fresh leaf
// (semantics §15), so this is the client's hot path. @peculiar/x509 still parses the result.

import { KeyObject, sign } from 'node:crypto';
import { TAG } from '../wire/tags.js';
import { type Der, enc, toBytes } from '../wire/writer.js';
import type { CryptoKey, KeyPair, KeyType } from './keys.js';

const BIT_STRING = 0x03;
const PRINTABLE = /^[A-Za-z0-9 '()+,\-./:=?]*$/;

export interface Extension {
  /** Dotted object identifier. */
  readonly oid: string;
  readonly critical: boolean;
  /** The DER the extnValue OCTET STRING holds. */
  readonly value: Uint8Array;
}

export interface CertificateFields {
  /** Positive, without a superfluous leading zero byte. */
  readonly serial: Uint8Array;
  /** DER of the issuer's Name, exactly as in the issuer certificate's subject. */
  readonly issuer: Uint8Array;
  /** DER of the subject's Name. */
  readonly subject: Uint8Array;
  readonly notBefore: Date;
  readonly notAfter: Date;
  /** DER SubjectPublicKeyInfo. */
  readonly publicKey: Uint8Array;
  readonly extensions: readonly Extension[];
}

/** The whole certificate, signed by `signer` with the algorithm its key type calls for. */
export function encodeCertificate(fields: CertificateFields, signer: KeyPair): Uint8Array {
  const algorithm = raw(SIGNATURE_ALGORITHM[signer.type]);
  const tbs = toBytes(
    enc.sequence([
      enc.explicit(0, enc.integer(2)),
      enc.primitive(TAG.INTEGER, fields.serial),
      algorithm,
      raw(fields.issuer),
      enc.sequence([time(fields.notBefore), time(fields.notAfter)]),
      raw(fields.subject),
      raw(fields.publicKey),
      enc.explicit(3, enc.sequence(fields.extensions.map(extension))),
    ]),
  );
  const signature = signTbs(tbs, signer);
  return toBytes(enc.sequence([raw(tbs), algorithm, bitString(signature)]));
}

/** A Name holding one CN (UTF8String unless printable); null is the empty Name. */
export function encodeName(commonName: string | null): Uint8Array {
  if (commonName === null) return toBytes(enc.sequence([]));
  const value = PRINTABLE.test(commonName)
    ? enc.primitive(0x13, Buffer.from(commonName, 'latin1'))
    : enc.utf8(commonName);
  return toBytes(enc.sequence([enc.set([enc.sequence([oid('2.5.4.3'), value])])]));
}

/** DER SubjectPublicKeyInfo of a WebCrypto key. */
export function publicKeyInfo(key: CryptoKey): Uint8Array {
  return new Uint8Array(KeyObject.from(key).export({ type: 'spki', format: 'der' }));
}

// ---------------------------------------------------------------------------------------------
// Extension values

/** KeyUsage from @peculiar's KeyUsageFlags (bit i of the flags is named bit i), DER-minimal. */
export function keyUsage(flags: number): Uint8Array {
  let highest = -1;
  for (let bit = 0; bit < 9; bit++) if (flags & (1 << bit)) highest = bit;
  const bytes = new Uint8Array(highest < 0 ? 0 : (highest >> 3) + 1);
  for (let bit = 0; bit <= highest; bit++) {
    if (flags & (1 << bit)) bytes[bit >> 3] = (bytes[bit >> 3] as number) | (0x80 >> (bit & 7));
  }
  const unused = highest < 0 ? 0 : 7 - (highest & 7);
  return toBytes(enc.primitive(BIT_STRING, Uint8Array.of(unused, ...bytes)));
}

export function basicConstraints(ca: boolean): Uint8Array {
  return toBytes(enc.sequence(ca ? [enc.boolean(true)] : []));
}

export function extendedKeyUsage(purposes: readonly string[]): Uint8Array {
  return toBytes(enc.sequence(purposes.map(oid)));
}

/** The names a server certificate is valid for: DNS names, and IP addresses as 4 or 16 bytes. */
export type AltName = { readonly dns: string } | { readonly ip: Uint8Array };

/** SubjectAltName: GeneralNames of dNSName [2] IA5String and iPAddress [7] OCTET STRING. */
export function subjectAltName(names: readonly AltName[]): Uint8Array {
  return toBytes(
    enc.sequence(
      names.map((n) =>
        'dns' in n ? enc.primitive(0x82, Buffer.from(n.dns, 'latin1')) : enc.primitive(0x87, n.ip),
      ),
    ),
  );
}

export function subjectKeyIdentifier(id: Uint8Array): Uint8Array {
  return toBytes(enc.octets(id));
}

export function authorityKeyIdentifier(id: Uint8Array): Uint8Array {
  return toBytes(enc.sequence([enc.primitive(0x80, id)]));
}

// ---------------------------------------------------------------------------------------------

const SIGNATURE_ALGORITHM: Readonly<Record<KeyType, Uint8Array>> = (() => {
  const ecdsa = (arc: number) => toBytes(enc.sequence([oid(`1.2.840.10045.4.3.${arc}`)]));
  const rsa = toBytes(enc.sequence([oid('1.2.840.113549.1.1.11'), enc.null()]));
  return {
    ed25519: toBytes(enc.sequence([oid('1.3.101.112')])),
    p256: ecdsa(2),
    p384: ecdsa(3),
    p521: ecdsa(4),
    rsa2048: rsa,
    rsa4096: rsa,
  };
})();

const HASH: Readonly<Record<KeyType, string | null>> = {
  ed25519: null,
  p256: 'sha256',
  p384: 'sha384',
  p521: 'sha512',
  rsa2048: 'sha256',
  rsa4096: 'sha256',
};

function signTbs(tbs: Uint8Array, signer: KeyPair): Uint8Array {
  const key = KeyObject.from(signer.privateKey);
  const ecdsa = signer.type.startsWith('p');
  return new Uint8Array(sign(HASH[signer.type], tbs, ecdsa ? { key, dsaEncoding: 'der' } : key));
}

function extension(e: Extension): Der {
  const parts = [oid(e.oid), ...(e.critical ? [enc.boolean(true)] : []), enc.octets(e.value)];
  return enc.sequence(parts);
}

/** UTCTime through 2049, GeneralizedTime after (RFC 5280 §4.1.2.5), whole seconds. */
function time(date: Date): Der {
  const seconds = new Date(Math.floor(date.getTime() / 1000) * 1000);
  return seconds.getUTCFullYear() < 2050 ? enc.utcTime(seconds) : enc.generalizedTime(seconds);
}

function oid(dotted: string): Der {
  // BigInt: an arc may exceed 2^53 (a UUID under 2.25, as Petrel's token purpose is).
  const arcs = dotted.split('.').map(BigInt);
  const out: number[] = [];
  const [first = 0n, second = 0n, ...rest] = arcs;
  for (const arc of [first * 40n + second, ...rest]) {
    const base128: number[] = [Number(arc & 0x7fn)];
    for (let n = arc >> 7n; n > 0n; n >>= 7n) base128.unshift(Number(n & 0x7fn) | 0x80);
    out.push(...base128);
  }
  return enc.primitive(TAG.OID, Uint8Array.from(out));
}

function bitString(bytes: Uint8Array): Der {
  const body = new Uint8Array(bytes.length + 1);
  body.set(bytes, 1);
  return enc.primitive(BIT_STRING, body);
}

/** Already-encoded DER placed as is. */
function raw(bytes: Uint8Array): Der {
  return {
    size: bytes.length,
    write: (out, pos) => {
      out.set(bytes, pos);
      return pos + bytes.length;
    },
  };
}
