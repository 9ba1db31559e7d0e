// Reading certificates: PEM or DER in, the constraints each one carries, and the checks path
// validation applies to one certificate at a time (chain.ts strings them together).

import { err, ok, type Result } from '../resources/errors.js';
import {
  type RawExtension,
  readBasicConstraints,
  readCertificate,
  readExtendedKeyUsage,
  readKeyUsage,
} from './der.js';
import { describeError, type TlsError } from './errors.js';
import { x509 } from './x509.js';

/** One certificate of a verified path, with what identity derivation needs from it. */
export interface PathCertificate {
  readonly der: Uint8Array;
  /** The first CN of the subject; null when the subject has none (absent is not the same as ""). */
  readonly commonName: string | null;
  readonly subject: string;
}

const OID = {
  keyUsage: '2.5.29.15',
  basicConstraints: '2.5.29.19',
  extKeyUsage: '2.5.29.37',
  subjectAltName: '2.5.29.17',
  subjectKeyId: '2.5.29.14',
  authorityKeyId: '2.5.29.35',
  clientAuth: '1.3.6.1.5.5.7.3.2',
  anyExtendedKeyUsage: '2.5.29.37.0',
} as const;

/** Critical extensions this verifier understands; any other critical one makes a certificate unusable. */
const PROCESSED_CRITICAL: ReadonlySet<string> = new Set([
  OID.keyUsage,
  OID.basicConstraints,
  OID.extKeyUsage,
  OID.subjectAltName,
  OID.subjectKeyId,
  OID.authorityKeyId,
]);

/** DER values from PEM text (any number of blocks, any label) or one DER value passed through. */
export function decodeDer(input: string | Uint8Array): Uint8Array[] {
  if (typeof input !== 'string' && input[0] === 0x30) return [input];
  const text = typeof input === 'string' ? input : Buffer.from(input).toString('utf8');
  return x509.PemConverter.decode(text).map((buffer) => new Uint8Array(buffer));
}

export interface Facts {
  readonly ca: boolean;
  readonly pathLength: number | null;
  /** KeyUsageFlags bits, null when the extension is absent. */
  readonly keyUsage: number | null;
  /** Extended key usage OIDs, null when absent. */
  readonly extKeyUsage: readonly string[] | null;
  readonly unprocessedCritical: readonly string[];
  readonly selfIssued: boolean;
}

/** The constraints a certificate carries, read once from its DER; a malformed extension is an error. */
export function inspect(cert: x509.X509Certificate): Result<Facts, TlsError> {
  let extensions: readonly RawExtension[];
  try {
    extensions = readCertificate(new Uint8Array(cert.rawData)).extensions;
  } catch (e) {
    return err('E_TLS_CERT_INVALID', `certificate ${cert.subject} is not DER: ${describeError(e)}`);
  }
  let found: Pick<Facts, 'ca' | 'pathLength' | 'keyUsage' | 'extKeyUsage'> = {
    ca: false,
    pathLength: null,
    keyUsage: null,
    extKeyUsage: null,
  };
  try {
    for (const e of extensions) {
      if (e.oid === OID.basicConstraints) found = { ...found, ...readBasicConstraints(e.value) };
      else if (e.oid === OID.keyUsage) found = { ...found, keyUsage: readKeyUsage(e.value) };
      else if (e.oid === OID.extKeyUsage) found = { ...found, extKeyUsage: readExtendedKeyUsage(e.value) };
    }
  } catch (e) {
    return err(
      'E_TLS_CERT_INVALID',
      `certificate ${cert.subject} has a malformed extension: ${describeError(e)}`,
    );
  }
  return ok({
    ...found,
    unprocessedCritical: extensions
      .filter((e) => e.critical && !PROCESSED_CRITICAL.has(e.oid))
      .map((e) => e.oid),
    selfIssued: cert.subject === cert.issuer,
  });
}

export function checkIssuer(
  cert: x509.X509Certificate,
  f: Facts,
  intermediatesBelow: number,
): Result<void, TlsError> {
  if (!f.ca)
    return err('E_TLS_NOT_CA', `issuer ${cert.subject} is not a CA (basicConstraints CA:TRUE missing)`);
  if (f.keyUsage !== null && (f.keyUsage & x509.KeyUsageFlags.keyCertSign) === 0) {
    return err('E_TLS_KEY_USAGE', `issuer ${cert.subject} may not sign certificates (no keyCertSign)`);
  }
  if (f.pathLength !== null && intermediatesBelow > f.pathLength) {
    return err(
      'E_TLS_PATH_LENGTH',
      `issuer ${cert.subject} allows ${f.pathLength} intermediate certificates below it, the path has ${intermediatesBelow}`,
    );
  }
  return ok(undefined);
}

export function checkLeafUsage(cert: x509.X509Certificate, f: Facts): Result<void, TlsError> {
  if (f.keyUsage !== null && (f.keyUsage & x509.KeyUsageFlags.digitalSignature) === 0) {
    return err('E_TLS_KEY_USAGE', `client certificate ${cert.subject} may not sign (no digitalSignature)`);
  }
  const eku = f.extKeyUsage;
  if (eku !== null && !eku.includes(OID.clientAuth) && !eku.includes(OID.anyExtendedKeyUsage)) {
    return err(
      'E_TLS_KEY_USAGE',
      `client certificate ${cert.subject} is not for TLS clients (no clientAuth)`,
    );
  }
  return ok(undefined);
}

export function checkValidity(cert: x509.X509Certificate, now: Date): Result<void, TlsError> {
  if (now < cert.notBefore) {
    return err(
      'E_TLS_NOT_YET_VALID',
      `certificate ${cert.subject} is not valid before ${iso(cert.notBefore)}`,
      {
        notBefore: iso(cert.notBefore),
      },
    );
  }
  if (now > cert.notAfter) {
    return err('E_TLS_EXPIRED', `certificate ${cert.subject} expired at ${iso(cert.notAfter)}`, {
      notAfter: iso(cert.notAfter),
    });
  }
  return ok(undefined);
}

const STRONG_HASHES: ReadonlySet<string> = new Set(['SHA-256', 'SHA-384', 'SHA-512']);

/** SHA-2 signatures or EdDSA, as Albatross allows. */
export function checkAlgorithm(cert: x509.X509Certificate): Result<void, TlsError> {
  let name = 'unknown';
  try {
    const algorithm = cert.signatureAlgorithm as { readonly name?: string; readonly hash?: unknown };
    name = algorithm.name ?? 'unknown';
    if (name === 'Ed25519' || name === 'Ed448') return ok(undefined);
    const hash = algorithm.hash;
    const hashName =
      typeof hash === 'string' ? hash : ((hash as { readonly name?: string } | undefined)?.name ?? undefined);
    if (hashName !== undefined && STRONG_HASHES.has(hashName.toUpperCase())) return ok(undefined);
    name = `${name} with ${hashName ?? 'no hash'}`;
  } catch {
    // An algorithm the library does not know is refused like a weak one.
  }
  return err(
    'E_TLS_SIGNATURE',
    `certificate ${cert.subject} is signed with a disallowed algorithm (${name})`,
  );
}

/** What identity derivation reads from a certificate; `der` defaults to the certificate's bytes. */
export function viewOf(
  cert: x509.X509Certificate,
  der: Uint8Array = new Uint8Array(cert.rawData),
): PathCertificate {
  const names = cert.subjectName.getField('CN');
  return { der, commonName: names[0] ?? null, subject: cert.subject };
}

const iso = (date: Date): string => date.toISOString();
