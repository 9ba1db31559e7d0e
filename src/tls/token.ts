// Bearer tokens of the web API: a leaf certificate signed by a delegation's key
// (pki.ts issueToken), carried with the delegation's chain as text; verified as a TLS client's
// chain is (chain.ts, with the token purpose) and read into the same delegation (identity.ts).

import { createHash } from 'node:crypto';
import { err, ok, type Result } from '../resources/errors.js';
import { type Path, parseLabel } from '../resources/name.js';
import { type LeafPurpose, parseCertificate } from './certs.js';
import {
  MAX_CHAIN,
  type PathCertificate,
  type TrustAnchor,
  type VerifiedPath,
  verifyClientChain,
} from './chain.js';
import type { TlsError } from './errors.js';
import { type ChainPolicy, checkChainPolicies, delegationOf } from './identity.js';

/** What every token begins with: the format's version, so another can follow it. */
export const TOKEN_PREFIX = 'ptk1.';
/**
 * The longest token read. A delegation chain of MAX_CHAIN - 1 certificates stays well below it,
 * and an HTTP request's headers together may hold 16 KiB in Node.
 */
export const MAX_TOKEN_CHARS = 12 * 1024;

const PURPOSE: LeafPurpose = 'token';
const BASE64URL = /^[A-Za-z0-9_-]+$/;

/** The text of a token: the prefix, then the certificates' DER, leaf first, in base64url. */
export function encodeToken(ders: readonly Uint8Array[]): string {
  return (
    TOKEN_PREFIX +
    Buffer.concat(ders.map((d) => Buffer.from(d.buffer, d.byteOffset, d.byteLength))).toString('base64url')
  );
}

/** A token's certificates, leaf first; anything but a token's shape is E_TOKEN_MALFORMED. Pure. */
export function parseToken(text: string): Result<Uint8Array[], TlsError> {
  if (text.length > MAX_TOKEN_CHARS) {
    return err(
      'E_TOKEN_MALFORMED',
      `the token is ${text.length} characters long, the limit is ${MAX_TOKEN_CHARS}`,
    );
  }
  if (!text.startsWith(TOKEN_PREFIX)) return err('E_TOKEN_MALFORMED', `a token begins with ${TOKEN_PREFIX}`);
  const body = text.slice(TOKEN_PREFIX.length);
  if (!BASE64URL.test(body)) return err('E_TOKEN_MALFORMED', 'the token holds characters outside base64url');
  return splitCertificates(new Uint8Array(Buffer.from(body, 'base64url')), 'the token', 'E_TOKEN_MALFORMED');
}

/**
 * DER certificates laid end to end, leaf first, then its delegation's chain (a token's body, a
 * deployment proof): at least two, fewer than MAX_CHAIN; otherwise what is wrong, about `what`.
 */
export function splitCertificates(
  bytes: Uint8Array,
  what: string,
  code: 'E_TOKEN_MALFORMED' | 'E_DEPLOY_MALFORMED',
): Result<Uint8Array[], TlsError> {
  const ders: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; ) {
    if (ders.length >= MAX_CHAIN - 1)
      return err(code, `${what} holds more than ${MAX_CHAIN - 1} certificates`);
    const end = sequenceEnd(bytes, at);
    if (end === null) return err(code, `${what}'s certificate ${ders.length} is cut or not DER`);
    ders.push(bytes.subarray(at, end));
    at = end;
  }
  if (ders.length < 2) return err(code, `${what} holds no delegation chain`);
  return ok(ders);
}

/** The end of the DER SEQUENCE at `at` (definite length, at most 4 length bytes), or null. */
function sequenceEnd(bytes: Uint8Array, at: number): number | null {
  if (bytes[at] !== 0x30 || at + 2 > bytes.length) return null;
  const first = bytes[at + 1] as number;
  let length = first;
  let head = 2;
  if (first & 0x80) {
    const count = first & 0x7f;
    if (count === 0 || count > 4 || at + 2 + count > bytes.length) return null;
    length = 0;
    for (let i = 0; i < count; i++) length = length * 256 + (bytes[at + 2 + i] as number);
    head += count;
  }
  const end = at + head + length;
  return end <= bytes.length ? end : null;
}

/**
 * The id a certificate is revoked by: the first 16 bytes of its SHA-256, in hex. A token's id is
 * its leaf's; a delegation's id revokes every token made from it.
 */
export function certificateId(der: Uint8Array): string {
  return createHash('sha256').update(der).digest('hex').slice(0, 32);
}

/** The first certificate of a verified path, leaf first, whose id `revoked` names; or null. */
export function revokedOn(
  path: VerifiedPath,
  revoked: (id: string) => boolean,
): { readonly cert: PathCertificate; readonly id: string } | null {
  for (const cert of path) {
    const id = certificateId(cert.der);
    if (revoked(id)) return { cert, id };
  }
  return null;
}

/** petreld's deny-list, in its state directory (`petrel ca revoke` appends to it). */
export const DENY_LIST_FILE = 'web-deny-list';

/** A deny-list line: an id, optionally followed by a comment after whitespace or `#`. */
const DENY_LINE = /^([0-9a-f]{32})(?:\s.*|#.*)?$/;

/**
 * The ids of a deny-list's text, one a line; blank lines and `#` comments are skipped, and any
 * other line is reported by its number (a typo must not pass for an empty list). Pure.
 */
export function parseDenyList(text: string): { ids: ReadonlySet<string>; invalid: readonly number[] } {
  const ids = new Set<string>();
  const invalid: number[] = [];
  for (const [index, raw] of text.split('\n').entries()) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const found = DENY_LINE.exec(line.toLowerCase());
    if (found === null) invalid.push(index + 1);
    else ids.add(found[1] as string);
  }
  return { ids, invalid };
}

/** Whom a verified token speaks for. */
export interface VerifiedToken {
  /** Its leaf's certificateId. */
  readonly id: string;
  /** The CN its maker gave it (`--name`), a label. */
  readonly name: string;
  readonly expires: Date;
  /** The delegation's path, root first (empty for a token of the root CA itself). */
  readonly path: Path;
  /** The chain's policies, deepest first: what a request installs before its command. */
  readonly policies: readonly ChainPolicy[];
}

/**
 * A token checked as a TLS client's chain is, at `now`: its path to the anchor by signature,
 * validity, constraints, the token purpose on the leaf; then no certificate of the path is
 * revoked; then the delegation and its policies as the TLS endpoint derives them.
 */
export function verifyToken(
  text: string,
  anchor: TrustAnchor,
  now: Date,
  revoked: (id: string) => boolean,
): Result<VerifiedToken, TlsError> {
  const ders = parseToken(text);
  if (!ders.ok) return ders;
  const path = verifyClientChain(ders.value, anchor, now, PURPOSE);
  if (!path.ok) {
    const leaf = parseCertificate(ders.value[0] as Uint8Array);
    if (path.error.code === 'E_TLS_EXPIRED' && leaf.ok && leaf.value.notAfter < now) {
      const name = leaf.value.commonName ?? '';
      return err('E_TOKEN_EXPIRED', `the token ${name} expired at ${leaf.value.notAfter.toISOString()}`, {
        expired: leaf.value.notAfter.toISOString(),
      });
    }
    return path;
  }
  const [leaf, ...issuers] = path.value;
  if (leaf === undefined) return err('E_TOKEN_MALFORMED', 'the token holds no certificate');
  const denied = revokedOn(path.value, revoked);
  if (denied !== null) {
    const { cert, id } = denied;
    const what = cert === leaf ? `the token ${leaf.commonName ?? ''}` : `its delegation ${cert.subject}`;
    return err('E_TOKEN_REVOKED', `${what} is revoked (id ${id})`, { id });
  }
  const name = leaf.commonName === null ? null : parseLabel(leaf.commonName);
  if (name === null || !name.ok) return err('E_TOKEN_MALFORMED', 'the token has no valid name');
  const delegation = delegationOf(issuers);
  if (!delegation.ok) return delegation;
  const fits = checkChainPolicies(delegation.value.policies);
  if (!fits.ok) return fits;
  return ok({
    id: certificateId(leaf.der),
    name: leaf.commonName as string,
    expires: leaf.notAfter,
    path: delegation.value.path,
    policies: delegation.value.policies,
  });
}
