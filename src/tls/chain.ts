// The certification path of a client, built and verified here rather than trusted from the TLS
// library: issuers are linked by name AND by the issuer's key verifying the signature, so a
// look-alike (same subject, other key) never stands in for the real intermediate (semantics §14.1).
// Synchronous: certificates are read by der.ts and signatures checked by node:crypto.

import { createHash, createPublicKey, type KeyObject } from 'node:crypto';
import { err, ok, type Result } from '../resources/errors.js';
import {
  type Certificate,
  checkAlgorithm,
  checkIssuer,
  checkLeafUsage,
  checkValidity,
  decodeDer,
  type LeafPurpose,
  type PathCertificate,
  parseCertificate,
} from './certs.js';
import { KEY_USAGE } from './der.js';
import { describeError, type TlsError, tlsError } from './errors.js';
import { verifySignature } from './signature.js';

export type { PathCertificate };

/** Chains of this many certificates or more are refused, presented or on the path (differences (c)). */
export const MAX_CHAIN = 10;

/** The one certificate a client's path must end at. */
export interface TrustAnchor {
  readonly der: Uint8Array;
  /** Read once at load, as presented certificates are: its constraints apply to every path. */
  readonly read: Certificate;
}

/** Leaf first, then its issuers; the trust anchor is included only if the client sent it. */
export type VerifiedPath = readonly PathCertificate[];

/** Reads the trust anchor file: exactly one certificate (PEM or DER), a CA that may sign. */
export function loadTrustAnchor(input: string | Uint8Array): Result<TrustAnchor, TlsError> {
  let ders: Uint8Array[];
  try {
    ders = decodeDer(input);
  } catch (e) {
    return err('E_TLS_ANCHOR', `the CA file does not hold certificates: ${describeError(e)}`);
  }
  if (ders.length !== 1) {
    return err('E_TLS_ANCHOR', `the CA file must hold exactly one certificate, it holds ${ders.length}`);
  }
  const der = ders[0] as Uint8Array;
  const read = parseCertificate(der);
  if (!read.ok) return err('E_TLS_ANCHOR', `the CA certificate: ${read.error.message}`);
  const facts = read.value.facts;
  if (!facts.ca) return err('E_TLS_ANCHOR', `the CA certificate ${read.value.subject} is not a CA`);
  if (facts.keyUsage !== null && (facts.keyUsage & KEY_USAGE.keyCertSign) === 0) {
    return err('E_TLS_ANCHOR', `the CA certificate ${read.value.subject} may not sign certificates`);
  }
  return ok({ der, read: read.value });
}

/** A read certificate with what verification derives from it, computed on first use. */
interface Parsed {
  readonly cert: Certificate;
  /**
   * Kept certificates only: the kept certificates (or the anchor) whose key verified this one's
   * signature. The same bytes verify the same way every time, so a delegation chain's links are
   * checked once, not on every connection; only the leaf's signature is checked each time.
   */
  readonly signedBy?: WeakSet<Parsed>;
  /** Its key for node:crypto (null: not a key node:crypto can use), on first use as an issuer. */
  verifier?: KeyObject | null;
}

/**
 * Issuer certificates come back on every connection of a client (its delegation chain), so the
 * last ISSUER_CACHE_SIZE read are kept, with the links already verified (`signedBy`). An entry
 * is looked up by the SHA-256 of the DER (a key of fixed size, whatever a client sends) and used
 * only when its full DER is the same bytes; a verified link joins it to one issuer entry (itself
 * kept by its full DER) or to the anchor. So a certificate differing in any byte (another key, a
 * forged signature, another validity) or under another issuer is verified afresh, and validity,
 * CA flags and path lengths are still checked on every connection (checkPath), cached or not.
 * Leaves are fresh each time (and may carry an image), so they are not kept.
 */
const ISSUER_CACHE_SIZE = 128;
const issuerCache = new Map<string, Parsed>();
const anchorParsed = new WeakMap<TrustAnchor, Parsed>();

function parse(der: Uint8Array, keep: boolean): Result<Parsed, TlsError> {
  if (!keep) {
    const read = parseCertificate(der);
    return read.ok ? ok({ cert: read.value }) : read;
  }
  const key = createHash('sha256').update(der).digest('base64');
  const cached = issuerCache.get(key);
  if (cached !== undefined && sameBytes(cached.cert.der, der)) {
    issuerCache.delete(key);
    issuerCache.set(key, cached);
    return ok(cached);
  }
  const read = parseCertificate(der);
  if (!read.ok) return read;
  const parsed: Parsed = { cert: read.value, signedBy: new WeakSet() };
  issuerCache.delete(key);
  issuerCache.set(key, parsed);
  if (issuerCache.size > ISSUER_CACHE_SIZE) issuerCache.delete(issuerCache.keys().next().value as string);
  return ok(parsed);
}

/** Whether `issuer`'s key verifies `child`'s signature (an allowed algorithm checked before). */
function signatureVerifies(child: Parsed, issuer: Parsed): boolean {
  const scheme = child.cert.scheme;
  if (!scheme.ok) return false;
  if (issuer.verifier === undefined) {
    try {
      const spki = issuer.cert.fields.publicKey;
      issuer.verifier = createPublicKey({
        key: Buffer.from(spki.buffer, spki.byteOffset, spki.byteLength),
        format: 'der',
        type: 'spki',
      });
    } catch {
      issuer.verifier = null;
    }
  }
  return issuer.verifier !== null && verifySignature(child.cert.fields, scheme.value, issuer.verifier);
}

interface Candidate {
  readonly parsed: Parsed;
  /** The same bytes as the trust anchor: the client sent the anchor along. */
  readonly isAnchor: boolean;
}

/** Partial paths the search may extend before it gives up. */
const SEARCH_BUDGET = 256;

/** Failures found while searching, ranked so the most telling one is reported. */
const RANK = { noIssuer: 0, badSignature: 1, pathCheck: 2 } as const;

/**
 * Builds a path from `presented[0]` (the leaf) through the other presented certificates to the
 * trust anchor and checks it at `now`: signatures (SHA-2 or EdDSA), validity of every
 * certificate and of the anchor, unprocessed critical extensions, CA:TRUE and keyCertSign on
 * issuers, path lengths, and that the leaf may authenticate a TLS client. Several candidate
 * issuers (same subject, same key) are tried in turn; presented certificates off the path are
 * ignored. 10 or more presented certificates are refused before any is parsed. A web API token
 * (token.ts) is verified here too, with `purpose` 'token': only the leaf's usage differs.
 */
export function verifyClientChain(
  presented: readonly Uint8Array[],
  anchor: TrustAnchor,
  now: Date,
  purpose: LeafPurpose = 'tls-client',
): Result<VerifiedPath, TlsError> {
  if (presented.length === 0) return err('E_TLS_NO_CERTIFICATE', 'the client presented no certificate');
  if (presented.length >= MAX_CHAIN) {
    return err('E_TLS_CHAIN_TOO_LONG', 'certificate chain too long', { presented: presented.length });
  }
  const anchorValid = checkValidity(anchor.read, now);
  if (!anchorValid.ok) return anchorValid;
  const candidates: Candidate[] = [];
  for (const [index, der] of presented.entries()) {
    const parsed = parse(der, index > 0);
    if (!parsed.ok) {
      return err(
        'E_TLS_CERT_INVALID',
        `presented certificate ${index} does not parse: ${parsed.error.message}`,
      );
    }
    candidates.push({ parsed: parsed.value, isAnchor: sameBytes(der, anchor.der) });
  }
  const leaf = (candidates[0] as Candidate).parsed.cert;
  for (const candidate of candidates) leaf.shareIssuerName(candidate.parsed.cert);
  const search = new PathSearch(candidates, anchor, now, purpose);
  const found = search.walk([0]);
  if (found !== null) return ok(found.map((i) => (candidates[i] as Candidate).parsed.cert));
  return { ok: false, error: search.failure ?? tlsError('E_TLS_UNTRUSTED', 'no path to the trust anchor') };
}

class PathSearch {
  readonly #certs: readonly Candidate[];
  readonly #anchor: Parsed;
  readonly #now: Date;
  readonly #purpose: LeafPurpose;
  /** Memoized "is cert i signed by the key of j" (j = -1: the trust anchor), keyed i * 16 + j. */
  readonly #signatures = new Map<number, boolean>();
  #failure: { error: TlsError; rank: number } | null = null;
  #budget = SEARCH_BUDGET;

  constructor(certs: readonly Candidate[], anchor: TrustAnchor, now: Date, purpose: LeafPurpose) {
    this.#certs = certs;
    this.#now = now;
    this.#purpose = purpose;
    let parsed = anchorParsed.get(anchor);
    if (parsed === undefined) {
      parsed = { cert: anchor.read };
      anchorParsed.set(anchor, parsed);
    }
    this.#anchor = parsed;
  }

  get failure(): TlsError | null {
    return this.#failure?.error ?? null;
  }

  #record(error: TlsError, rank: number): void {
    if (this.#failure === null || rank > this.#failure.rank) this.#failure = { error, rank };
  }

  /** Depth-first: returns the first path (indices into the presented list) that passes every check. */
  walk(path: readonly number[]): readonly number[] | null {
    // Same-named, same-keyed certificates could otherwise make the search factorial.
    if (--this.#budget < 0) {
      this.#record(tlsError('E_TLS_UNTRUSTED', 'too many candidate paths'), RANK.pathCheck + 1);
      return null;
    }
    const tip = this.#certs[path.at(-1) as number] as Candidate;
    if (tip.isAnchor) return this.#complete(path);
    const last = tip.parsed.cert;
    // A name match whose signature fails is a look-alike; a linked issuer that led nowhere has
    // recorded its own failure further up.
    let nameMatched = false;
    let linked = false;
    if (last.namedBy(this.#anchor.cert)) {
      nameMatched = true;
      if (this.#signedBy(path.at(-1) as number, -1)) {
        linked = true;
        const sent = this.#certs.findIndex((c, i) => c.isAnchor && !path.includes(i));
        const done = this.#complete(sent === -1 ? path : [...path, sent]);
        if (done !== null) return done;
      }
    }
    for (const [j, candidate] of this.#certs.entries()) {
      if (path.includes(j) || candidate.isAnchor || !last.namedBy(candidate.parsed.cert)) continue;
      nameMatched = true;
      if (!this.#signedBy(path.at(-1) as number, j)) continue;
      linked = true;
      const done = this.walk([...path, j]);
      if (done !== null) return done;
    }
    if (linked) return null;
    if (nameMatched) {
      const what = `the signature of ${last.subject} is not verified by the key of any certificate named ${last.issuer}`;
      this.#record(tlsError('E_TLS_SIGNATURE', what), RANK.badSignature);
    } else {
      const what = `no issuer ${last.issuer} of ${last.subject} among the presented certificates and the trust anchor`;
      this.#record(tlsError('E_TLS_UNTRUSTED', what), RANK.noIssuer);
    }
    return null;
  }

  /** Whether presented certificate `child` is signed by the key of `issuer` (-1: the anchor). */
  #signedBy(child: number, issuer: number): boolean {
    const memo = child * 16 + issuer;
    let verdict = this.#signatures.get(memo);
    if (verdict === undefined) {
      const parsed = (this.#certs[child] as Candidate).parsed;
      const by = issuer === -1 ? this.#anchor : (this.#certs[issuer] as Candidate).parsed;
      const algorithm = checkAlgorithm(parsed.cert);
      if (!algorithm.ok) this.#record(algorithm.error, RANK.pathCheck);
      verdict = parsed.signedBy?.has(by) === true || signatureVerifies(parsed, by);
      if (verdict) parsed.signedBy?.add(by);
      this.#signatures.set(memo, verdict);
    }
    return verdict;
  }

  #complete(path: readonly number[]): readonly number[] | null {
    if (path.length >= MAX_CHAIN) {
      this.#record(tlsError('E_TLS_CHAIN_TOO_LONG', 'certificate chain too long'), Number.POSITIVE_INFINITY);
      return null;
    }
    const checked = checkPath(
      path.map((i) => this.#certs[i] as Candidate),
      this.#anchor.cert,
      this.#now,
      this.#purpose,
    );
    if (checked.ok) return path;
    this.#record(checked.error, RANK.pathCheck);
    return null;
  }
}

/** Everything but the signatures and their algorithms (checked while linking), leaf first. */
function checkPath(
  path: readonly Candidate[],
  anchor: Certificate,
  now: Date,
  purpose: LeafPurpose,
): Result<void, TlsError> {
  /** Non-self-issued intermediates seen so far below the certificate being checked. */
  let intermediatesBelow = 0;
  for (const [position, { parsed, isAnchor }] of path.entries()) {
    const cert = parsed.cert;
    const critical = cert.facts.unprocessedCritical;
    if (critical.length > 0) {
      return err(
        'E_TLS_CRITICAL_EXTENSION',
        `certificate ${cert.subject} has an unsupported critical extension ${critical.join(', ')}`,
        { extensions: critical },
      );
    }
    if (isAnchor) break;
    const valid = checkValidity(cert, now);
    if (!valid.ok) return valid;
    if (position === 0) {
      const leaf = checkLeafUsage(cert, purpose);
      if (!leaf.ok) return leaf;
      continue;
    }
    const issuer = checkIssuer(cert, intermediatesBelow);
    if (!issuer.ok) return issuer;
    if (!cert.selfIssued) intermediatesBelow++;
  }
  return checkIssuer(anchor, intermediatesBelow);
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.compare(a, b) === 0;
}
