// Reading certificates: PEM or DER in; the fields, names and constraints each one carries, read
// with der.ts and names.ts (every connection brings a fresh leaf, which @peculiar/x509 would take
// milliseconds to parse); and the checks path validation applies to one certificate at a time
// (chain.ts strings them together).

import { err, ok, type Result } from '../resources/errors.js';
import { guard, shiftError } from '../wire/errors.js';
import {
  type CertificateDer,
  KEY_USAGE,
  type RawExtension,
  readBasicConstraints,
  readCertificate,
  readExtendedKeyUsage,
  readKeyUsage,
} from './der.js';
import type { TlsError } from './errors.js';
import { checkName, commonName, nameText } from './names.js';
import { type SignatureScheme, signatureScheme } from './signature.js';
import type { x509 } from './x509.js';

/** One certificate of a verified path, with what identity derivation needs from it. */
export interface PathCertificate {
  readonly der: Uint8Array;
  /** The first CN of the subject; null when the subject has none (absent is not the same as ""). */
  readonly commonName: string | null;
  readonly subject: string;
  readonly notAfter: Date;
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

/**
 * The extended key usage of a web API bearer token's leaf (token.ts): an OID under 2.25, the
 * UUID arc (ITU-T X.667), from UUID 0db2002e-4d61-4928-aef2-240e7b906544, so no registry is
 * needed. Only a token's leaf carries it, and a token's leaf carries nothing else: no
 * certificate a client presents over TLS (clientAuth) or a server presents (serverAuth), public
 * as those are, can be passed off as a token, nor a token's leaf as a TLS client certificate.
 */
export const TOKEN_PURPOSE = '2.25.18204196454466538365762829139089319236';

/**
 * The extended key usage of a fleet deployment proof's leaf (deployment-proof.ts): an OID under
 * 2.25 as the token's, from UUID 6f1c3e2a-9b47-4d5e-8a21-c3f0b7d4e918. Only such a leaf carries
 * it, and it carries nothing else, so neither a TLS client's leaf nor a token (nor any other
 * certificate a delegation signed) passes for a proof, nor a proof for either of them.
 */
export const DEPLOYMENT_PURPOSE = '2.25.147690952729199264690257601551995824408';

/** What a path's leaf is for: a mutual-TLS client, a web API bearer token, a deployment proof. */
export type LeafPurpose = 'tls-client' | 'token' | 'deployment';

/** The purposes a leaf must carry alone and exactly, with what such a leaf is called. */
const EXACT_PURPOSES: Readonly<Record<Exclude<LeafPurpose, 'tls-client'>, { oid: string; what: string }>> = {
  token: { oid: TOKEN_PURPOSE, what: 'a web API token' },
  deployment: { oid: DEPLOYMENT_PURPOSE, what: 'a fleet deployment proof' },
};

/** Critical extensions this verifier understands; any other critical one makes a certificate unusable. */
const PROCESSED_CRITICAL: ReadonlySet<string> = new Set([
  OID.keyUsage,
  OID.basicConstraints,
  OID.extKeyUsage,
  OID.subjectAltName,
  OID.subjectKeyId,
  OID.authorityKeyId,
]);

/** One PEM block (RFC 7468): its label, then base64 text up to the END line of the same label. */
const PEM_BLOCK = /-----BEGIN ([^\r\n-]+)-----([^-]*)-----END \1-----/g;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * DER values from PEM text (any number of blocks, any label) or one DER value passed through.
 * Read here rather than by @peculiar/x509, which the daemon would otherwise load (megabytes
 * resident) only to read its CA file. A block whose body is not base64 is an error naming it.
 */
export function decodeDer(input: string | Uint8Array): Uint8Array[] {
  if (typeof input !== 'string' && input[0] === 0x30) return [input];
  const text = typeof input === 'string' ? input : Buffer.from(input).toString('utf8');
  const ders: Uint8Array[] = [];
  for (const [, label, body] of text.matchAll(PEM_BLOCK)) {
    const base64 = (body as string).replace(/\s+/g, '');
    if (base64.length % 4 !== 0 || !BASE64.test(base64)) {
      throw new Error(`the PEM block ${label} is not base64`);
    }
    ders.push(new Uint8Array(Buffer.from(base64, 'base64')));
  }
  return ders;
}

/** A DER value as one PEM block, 64 characters a line. */
export function encodePem(der: Uint8Array, label = 'CERTIFICATE'): string {
  const base64 = Buffer.from(der.buffer, der.byteOffset, der.byteLength).toString('base64');
  const lines = base64.match(/.{1,64}/g) ?? [];
  return [`-----BEGIN ${label}-----`, ...lines, `-----END ${label}-----`].join('\n');
}

export interface Facts {
  readonly ca: boolean;
  readonly pathLength: number | null;
  /** KEY_USAGE bits, null when the extension is absent. */
  readonly keyUsage: number | null;
  /** Extended key usage OIDs, null when absent. */
  readonly extKeyUsage: readonly string[] | null;
  readonly unprocessedCritical: readonly string[];
}

/**
 * A certificate as path validation sees it, read once from its DER (chain.ts keeps the issuers
 * it has seen). Immutable; its one-line names are printed on first use (messages, name matching).
 */
export class Certificate implements PathCertificate {
  readonly der: Uint8Array;
  readonly fields: CertificateDer;
  readonly facts: Facts;
  readonly commonName: string | null;
  /** How its signature is checked, or the name of the algorithm that is not allowed. */
  readonly scheme: Result<SignatureScheme, string>;
  #subject: string | undefined;
  #issuer: string | undefined;

  constructor(der: Uint8Array, fields: CertificateDer, facts: Facts, commonName: string | null) {
    this.der = der;
    this.fields = fields;
    this.facts = facts;
    this.commonName = commonName;
    this.scheme = signatureScheme(fields);
  }

  get subject(): string {
    this.#subject ??= nameText(this.fields.subject);
    return this.#subject;
  }

  get issuer(): string {
    this.#issuer ??= nameText(this.fields.issuer);
    return this.#issuer;
  }

  get extensions(): readonly RawExtension[] {
    return this.fields.extensions;
  }

  get notBefore(): Date {
    return this.fields.notBefore;
  }

  get notAfter(): Date {
    return this.fields.notAfter;
  }

  /**
   * Takes the text of its issuer's name from `other` when `other`'s subject is the same bytes: a
   * leaf's issuer is usually a kept intermediate, whose name is then printed once, not per leaf.
   */
  shareIssuerName(other: Certificate): void {
    if (this.#issuer === undefined && sameBytes(this.fields.issuer, other.fields.subject)) {
      this.#issuer = other.subject;
    }
  }

  /** Whether `other`'s subject names this certificate's issuer (same bytes, or same text). */
  namedBy(other: Certificate): boolean {
    return sameBytes(this.fields.issuer, other.fields.subject) || this.issuer === other.subject;
  }

  get selfIssued(): boolean {
    return this.namedBy(this);
  }
}

/**
 * Reads a certificate, its names and its constraints; anything malformed is E_TLS_CERT_INVALID
 * with the byte offset in `der` where it was found.
 */
export function parseCertificate(der: Uint8Array): Result<Certificate, TlsError> {
  const read = guard(() => readCertificate(der));
  if (!read.ok) return err('E_TLS_CERT_INVALID', `not a DER certificate: ${read.error.message}`);
  const fields = read.value;
  const offset = (part: Uint8Array): number => part.byteOffset - der.byteOffset;
  const issuer = guard(() => checkName(fields.issuer));
  if (!issuer.ok) {
    return err(
      'E_TLS_CERT_INVALID',
      `malformed issuer name: ${shiftError(issuer.error, offset(fields.issuer)).message}`,
    );
  }
  const cn = guard(() => commonName(fields.subject));
  if (!cn.ok) {
    return err(
      'E_TLS_CERT_INVALID',
      `malformed subject name: ${shiftError(cn.error, offset(fields.subject)).message}`,
    );
  }
  const facts = factsOf(fields, offset);
  if (!facts.ok) return facts;
  return ok(new Certificate(der, fields, facts.value, cn.value));
}

/** The constraints the extensions carry; `offset` places a part of the certificate for errors. */
function factsOf(fields: CertificateDer, offset: (part: Uint8Array) => number): Result<Facts, TlsError> {
  let found: Omit<Facts, 'unprocessedCritical'> = {
    ca: false,
    pathLength: null,
    keyUsage: null,
    extKeyUsage: null,
  };
  const unprocessedCritical: string[] = [];
  for (const e of fields.extensions) {
    const read = guard(() => constraintIn(e));
    if (!read.ok) {
      const where = shiftError(read.error, offset(e.value)).message;
      const subject = nameText(fields.subject);
      return err('E_TLS_CERT_INVALID', `certificate ${subject} has a malformed extension ${e.oid}: ${where}`);
    }
    if (read.value !== null) found = { ...found, ...read.value };
    if (e.critical && !PROCESSED_CRITICAL.has(e.oid)) unprocessedCritical.push(e.oid);
  }
  return ok({ ...found, unprocessedCritical });
}

/** What one extension says, if it is one of the three path validation reads. */
function constraintIn(e: RawExtension): Partial<Facts> | null {
  if (e.oid === OID.basicConstraints) return readBasicConstraints(e.value);
  if (e.oid === OID.keyUsage) return { keyUsage: readKeyUsage(e.value) };
  if (e.oid === OID.extKeyUsage) return { extKeyUsage: readExtendedKeyUsage(e.value) };
  return null;
}

export function checkIssuer(cert: Certificate, intermediatesBelow: number): Result<void, TlsError> {
  const f = cert.facts;
  if (!f.ca)
    return err('E_TLS_NOT_CA', `issuer ${cert.subject} is not a CA (basicConstraints CA:TRUE missing)`);
  if (f.keyUsage !== null && (f.keyUsage & KEY_USAGE.keyCertSign) === 0) {
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

export function checkLeafUsage(
  cert: Certificate,
  purpose: LeafPurpose = 'tls-client',
): Result<void, TlsError> {
  const f = cert.facts;
  if (f.keyUsage !== null && (f.keyUsage & KEY_USAGE.digitalSignature) === 0) {
    return err('E_TLS_KEY_USAGE', `client certificate ${cert.subject} may not sign (no digitalSignature)`);
  }
  const eku = f.extKeyUsage;
  if (purpose !== 'tls-client') {
    // Positive and exact: absent or anyExtendedKeyUsage would let any leaf of the chain pass.
    const { oid, what } = EXACT_PURPOSES[purpose];
    if (f.ca || eku === null || eku.length !== 1 || eku[0] !== oid) {
      return err('E_TLS_KEY_USAGE', `certificate ${cert.subject} is not ${what}`);
    }
    return ok(undefined);
  }
  if (eku !== null && !eku.includes(OID.clientAuth) && !eku.includes(OID.anyExtendedKeyUsage)) {
    return err(
      'E_TLS_KEY_USAGE',
      `client certificate ${cert.subject} is not for TLS clients (no clientAuth)`,
    );
  }
  return ok(undefined);
}

/** What validity checks read; a Certificate and an @peculiar/x509 certificate both have it. */
export interface Dated {
  readonly subject: string;
  readonly notBefore: Date;
  readonly notAfter: Date;
}

export function checkValidity(cert: Dated, now: Date): Result<void, TlsError> {
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

/** SHA-2 signatures or EdDSA, as Albatross allows. */
export function checkAlgorithm(cert: Certificate): Result<SignatureScheme, TlsError> {
  if (cert.scheme.ok) return cert.scheme;
  return err(
    'E_TLS_SIGNATURE',
    `certificate ${cert.subject} is signed with a disallowed algorithm (${cert.scheme.error})`,
  );
}

/** What identity derivation reads from a certificate; `der` defaults to the certificate's bytes. */
export function viewOf(
  cert: x509.X509Certificate,
  der: Uint8Array = new Uint8Array(cert.rawData),
): PathCertificate {
  const names = cert.subjectName.getField('CN');
  return { der, commonName: names[0] ?? null, subject: cert.subject, notAfter: cert.notAfter };
}

const iso = (date: Date): string => date.toISOString();

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.compare(a, b) === 0;
}
