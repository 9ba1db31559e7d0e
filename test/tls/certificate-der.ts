// Certificates assembled field by field for the reader tests: every part of the TBSCertificate
// can be replaced by arbitrary DER, so each malformation RFC 5280 rules out can be made alone.
// Signed with Ed25519 unless a signature is given (the readers never check it).

import { generateKeyPairSync, sign } from 'node:crypto';
import { type Der, enc, toBytes } from '../../src/wire/writer.js';

/** Already-encoded bytes placed as they are. */
export function raw(bytes: Uint8Array | readonly number[]): Der {
  const data = Uint8Array.from(bytes);
  return {
    size: data.length,
    write: (out, pos) => {
      out.set(data, pos);
      return pos + data.length;
    },
  };
}

export function oid(dotted: string): Der {
  const [first = 0, second = 0, ...rest] = dotted.split('.').map(Number);
  const out: number[] = [];
  for (const arc of [first * 40 + second, ...rest]) {
    const base128 = [arc & 0x7f];
    for (let n = Math.floor(arc / 128); n > 0; n = Math.floor(n / 128)) base128.unshift((n & 0x7f) | 0x80);
    out.push(...base128);
  }
  return enc.primitive(0x06, Uint8Array.from(out));
}

const ascii = (text: string): Uint8Array => Uint8Array.from(Buffer.from(text, 'latin1'));

/** A Name from RDNs of [type, value] pairs; a string value is a PrintableString. */
export function name(...rdns: (readonly (readonly [string, Der | string])[])[]): Der {
  return enc.sequence(
    rdns.map((rdn) =>
      enc.set(
        rdn.map(([type, value]) =>
          enc.sequence([oid(type), typeof value === 'string' ? enc.primitive(0x13, ascii(value)) : value]),
        ),
      ),
    ),
  );
}

export const CN = '2.5.4.3';
export const utcTime = (text: string): Der => enc.primitive(0x17, ascii(text));
export const generalizedTime = (text: string): Der => enc.primitive(0x18, ascii(text));

export function extension(id: string, value: Der | Uint8Array, critical = false): Der {
  const bytes = value instanceof Uint8Array ? value : toBytes(value);
  return enc.sequence([oid(id), ...(critical ? [enc.boolean(true)] : []), enc.octets(bytes)]);
}

const { publicKey, privateKey } = generateKeyPairSync('ed25519');
export const ED25519 = enc.sequence([oid('1.3.101.112')]);

export interface Parts {
  /** null leaves [0] out (a v1 certificate). */
  readonly version: Der | null;
  readonly serial: Der;
  readonly innerAlgorithm: Der;
  readonly issuer: Der;
  readonly validity: Der;
  readonly subject: Der;
  readonly publicKey: Der;
  /** Elements between the key and the extensions (unique IDs, or anything else). */
  readonly afterKey: readonly Der[];
  /** The list inside [3]; null leaves [3] out. */
  readonly extensions: readonly Der[] | null;
  readonly outerAlgorithm: Der;
  /** Default: an Ed25519 signature of the TBSCertificate. */
  readonly signature?: Der;
  /** Bytes appended after the Certificate SEQUENCE. */
  readonly trailing?: Uint8Array;
}

export const DEFAULTS: Parts = {
  version: enc.explicit(0, enc.integer(2)),
  serial: enc.integer(1),
  innerAlgorithm: ED25519,
  issuer: name([[CN, 'ca']]),
  validity: enc.sequence([utcTime('250101000000Z'), utcTime('350101000000Z')]),
  subject: name([[CN, 'web']]),
  publicKey: raw(publicKey.export({ type: 'spki', format: 'der' })),
  afterKey: [],
  extensions: [extension('2.5.29.19', enc.sequence([]), true)],
  outerAlgorithm: ED25519,
};

/** A certificate from DEFAULTS with `changes` applied. */
export function certificate(changes: Partial<Parts> = {}): Uint8Array {
  const p = { ...DEFAULTS, ...changes };
  const tbs = toBytes(
    enc.sequence([
      ...(p.version === null ? [] : [p.version]),
      p.serial,
      p.innerAlgorithm,
      p.issuer,
      p.validity,
      p.subject,
      p.publicKey,
      ...p.afterKey,
      ...(p.extensions === null ? [] : [enc.explicit(3, enc.sequence(p.extensions))]),
    ]),
  );
  const signature = p.signature ?? enc.primitive(0x03, Uint8Array.of(0, ...sign(null, tbs, privateKey)));
  const der = toBytes(enc.sequence([raw(tbs), p.outerAlgorithm, signature]));
  return p.trailing === undefined ? der : Uint8Array.from([...der, ...p.trailing]);
}
