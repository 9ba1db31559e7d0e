// The signature algorithms a client's certificates may be signed with (SHA-2 or EdDSA, as
// Albatross allows) and checking one synchronously with node:crypto: WebCrypto would cost a
// thread-pool round trip per signature, and every connection brings a fresh leaf to check.

import { constants, type KeyObject, verify } from 'node:crypto';
import { ok, type Result } from '../resources/errors.js';
import { guard } from '../wire/errors.js';
import { Reader } from '../wire/reader.js';
import { TAG } from '../wire/tags.js';
import { type CertificateDer, decodeOid } from './der.js';

/** How one certificate's signature is checked. */
export interface SignatureScheme {
  /** For messages, e.g. "ECDSA with SHA-256". */
  readonly name: string;
  /** node:crypto's digest; null for EdDSA, which hashes internally. */
  readonly digest: string | null;
  /** ECDSA signatures are DER; RSA-PSS needs its padding and salt length. */
  readonly dsaEncoding?: 'der';
  readonly pssSaltLength?: number;
}

/** Hash algorithms by OID, as node:crypto names them; only SHA-2 ones are allowed. */
const HASHES: Readonly<Record<string, string>> = {
  '1.3.14.3.2.26': 'sha1',
  '2.16.840.1.101.3.4.2.4': 'sha224',
  '2.16.840.1.101.3.4.2.1': 'sha256',
  '2.16.840.1.101.3.4.2.2': 'sha384',
  '2.16.840.1.101.3.4.2.3': 'sha512',
};

const SHA2: ReadonlySet<string> = new Set(['sha256', 'sha384', 'sha512']);

/** Algorithms whose parameters are absent (EdDSA, ECDSA) or NULL/absent (RSA PKCS #1 v1.5). */
const SCHEMES: Readonly<Record<string, SignatureScheme & { readonly nullParameters?: true }>> = {
  '1.3.101.112': { name: 'Ed25519', digest: null },
  '1.3.101.113': { name: 'Ed448', digest: null },
  '1.2.840.10045.4.3.2': { name: 'ECDSA with SHA-256', digest: 'sha256', dsaEncoding: 'der' },
  '1.2.840.10045.4.3.3': { name: 'ECDSA with SHA-384', digest: 'sha384', dsaEncoding: 'der' },
  '1.2.840.10045.4.3.4': { name: 'ECDSA with SHA-512', digest: 'sha512', dsaEncoding: 'der' },
  '1.2.840.113549.1.1.11': { name: 'RSA with SHA-256', digest: 'sha256', nullParameters: true },
  '1.2.840.113549.1.1.12': { name: 'RSA with SHA-384', digest: 'sha384', nullParameters: true },
  '1.2.840.113549.1.1.13': { name: 'RSA with SHA-512', digest: 'sha512', nullParameters: true },
};

/** Names for the refusal message of algorithms seen in the wild. */
const REFUSED: Readonly<Record<string, string>> = {
  '1.2.840.113549.1.1.4': 'RSA with MD5',
  '1.2.840.113549.1.1.5': 'RSA with SHA-1',
  '1.2.840.113549.1.1.14': 'RSA with SHA-224',
  '1.2.840.10045.4.1': 'ECDSA with SHA-1',
  '1.2.840.10045.4.3.1': 'ECDSA with SHA-224',
  '1.2.840.10040.4.3': 'DSA with SHA-1',
};

const RSA_PSS = '1.2.840.113549.1.1.10';
const MGF1 = '1.2.840.113549.1.1.8';
const NULL_PARAMETERS = Uint8Array.of(0x05, 0x00);

/** How `fields`' signature is checked, or why its algorithm is not allowed (the reason in words). */
export function signatureScheme(fields: CertificateDer): Result<SignatureScheme, string> {
  const { signatureAlgorithm: oid, signatureParameters: parameters } = fields;
  if (oid === RSA_PSS) return pssScheme(parameters);
  const scheme = SCHEMES[oid];
  if (scheme === undefined) return fail(REFUSED[oid] ?? oid);
  const allowed =
    parameters.length === 0 || (scheme.nullParameters === true && sameBytes(parameters, NULL_PARAMETERS));
  if (!allowed) return fail(`${scheme.name} with parameters`);
  return ok(scheme);
}

const fail = (reason: string): { ok: false; error: string } => ({ ok: false, error: reason });

/**
 * RSASSA-PSS-params (RFC 4055 §3.1): a SHA-2 hash, MGF1 with the same hash (node:crypto's
 * only choice), any salt length, trailer 1. The SHA-1 defaults are refused like SHA-1 itself.
 */
function pssScheme(parameters: Uint8Array): Result<SignatureScheme, string> {
  const read = guard(() => {
    const outer = new Reader(parameters);
    const params = outer.enter(TAG.SEQUENCE, 'RSASSA-PSS-params');
    outer.done();
    const hash = params.optionalExplicit(0, hashOf) ?? 'sha1';
    const mask =
      params.optionalExplicit(1, (r) =>
        r.sequence((mgf) => {
          const id = decodeOid(mgf.oid());
          return id === MGF1 ? hashOf(mgf) : `mask ${id}`;
        }),
      ) ?? 'sha1';
    const saltLength = params.optionalExplicit(2, (r) => r.int('saltLength')) ?? 20;
    const trailer = params.optionalExplicit(3, (r) => r.int('trailerField')) ?? 1;
    params.done();
    return { hash, mask, saltLength, trailer };
  });
  if (!read.ok) return fail(`RSA-PSS with malformed parameters (${read.error.message})`);
  const { hash, mask, saltLength, trailer } = read.value;
  const name = `RSA-PSS with ${hash}`;
  if (!SHA2.has(hash) || mask !== hash || saltLength < 0 || trailer !== 1) {
    return fail(`${name}, MGF1 with ${mask}, salt ${saltLength}, trailer ${trailer}`);
  }
  return ok({ name, digest: hash, pssSaltLength: saltLength });
}

/** A HashAlgorithm (an AlgorithmIdentifier with NULL or absent parameters) as a digest name. */
function hashOf(reader: Reader): string {
  return reader.sequence((algorithm) => {
    const id = decodeOid(algorithm.oid());
    if (!algorithm.atEnd()) algorithm.null();
    return HASHES[id] ?? id;
  });
}

/** Whether `key` verifies the signature of `fields` under `scheme`; false for a key of another type. */
export function verifySignature(fields: CertificateDer, scheme: SignatureScheme, key: KeyObject): boolean {
  const options =
    scheme.pssSaltLength !== undefined
      ? { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: scheme.pssSaltLength }
      : scheme.dsaEncoding !== undefined
        ? { key, dsaEncoding: scheme.dsaEncoding }
        : key;
  try {
    return verify(scheme.digest, fields.tbs, options, fields.signature);
  } catch {
    return false;
  }
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}
