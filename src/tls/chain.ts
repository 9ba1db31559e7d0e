// The certification path of a client, built and verified here rather than trusted from the TLS
// library: issuers are linked by name AND by the issuer's key verifying the signature, so a
// look-alike (same subject, other key) never stands in for the real intermediate (semantics §14.1).

import { createHash, createPublicKey, type KeyObject, verify } from 'node:crypto';
import { err, ok, type Result } from '../resources/errors.js';
import {
  checkAlgorithm,
  checkIssuer,
  checkLeafUsage,
  checkValidity,
  decodeDer,
  type Facts,
  inspect,
  type PathCertificate,
  viewOf,
} from './certs.js';
import { type CertificateDer, readCertificate } from './der.js';
import { describeError, type TlsError, tlsError } from './errors.js';
import type { CryptoKey } from './keys.js';
import { x509 } from './x509.js';

export type { PathCertificate };

/** Chains of this many certificates or more are refused, presented or on the path (differences (c)). */
export const MAX_CHAIN = 10;

/** The one certificate a client's path must end at. */
export interface TrustAnchor {
  readonly certificate: x509.X509Certificate;
  readonly der: Uint8Array;
  /** Read once at load: the anchor's constraints apply to every path. */
  readonly facts: Facts;
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
  let certificate: x509.X509Certificate;
  try {
    certificate = new x509.X509Certificate(der);
  } catch (e) {
    return err('E_TLS_ANCHOR', `the CA certificate does not parse: ${describeError(e)}`);
  }
  const facts = inspect(certificate);
  if (!facts.ok) return err('E_TLS_ANCHOR', facts.error.message);
  if (!facts.value.ca) return err('E_TLS_ANCHOR', `the CA certificate ${certificate.subject} is not a CA`);
  if (facts.value.keyUsage !== null && (facts.value.keyUsage & x509.KeyUsageFlags.keyCertSign) === 0) {
    return err('E_TLS_ANCHOR', `the CA certificate ${certificate.subject} may not sign certificates`);
  }
  return ok({ certificate, der, facts: facts.value });
}

/** A parsed certificate with what verification derives from it, computed on first use. */
interface Parsed {
  readonly cert: x509.X509Certificate;
  /** inspect() of the certificate (parsing extensions is not free). */
  facts?: Result<Facts, TlsError>;
  /** Its key imported into WebCrypto, per signature algorithm it verifies (RSA keys are bound to a hash). */
  readonly keys: Map<string, Promise<CryptoKey | null>>;
  /**
   * Kept certificates only: the kept certificates (or the anchor) whose key verified this one's
   * signature. The same bytes verify the same way every time, so a delegation chain's links are
   * checked once, not on every connection; only the leaf's signature is checked each time.
   */
  readonly signedBy?: WeakSet<Parsed>;
  /** Its DER fields (null: not strict DER) and its key for node:crypto, read on first use. */
  fields?: CertificateDer | null;
  verifier?: KeyObject | null;
}

/** node:crypto's digest for each signature algorithm verified synchronously; null: none (EdDSA). */
const DIGESTS: Readonly<Record<string, string | null>> = {
  '1.3.101.112': null, // Ed25519
  '1.3.101.113': null, // Ed448
  '1.2.840.10045.4.3.2': 'sha256', // ecdsa-with-SHA256
  '1.2.840.10045.4.3.3': 'sha384',
  '1.2.840.10045.4.3.4': 'sha512',
  '1.2.840.113549.1.1.11': 'sha256', // sha256WithRSAEncryption
  '1.2.840.113549.1.1.12': 'sha384',
  '1.2.840.113549.1.1.13': 'sha512',
};

function fieldsOf(parsed: Parsed): CertificateDer | null {
  if (parsed.fields === undefined) {
    try {
      parsed.fields = readCertificate(new Uint8Array(parsed.cert.rawData));
    } catch {
      parsed.fields = null;
    }
  }
  return parsed.fields;
}

/**
 * Whether `issuer`'s key verifies `child`'s signature, synchronously through node:crypto for the
 * algorithms above (WebCrypto costs a thread-pool round trip per call); null for any other
 * algorithm or encoding, which the library then verifies.
 */
function verifySignature(child: Parsed, issuer: Parsed): boolean | null {
  const fields = fieldsOf(child);
  const signer = fieldsOf(issuer);
  if (fields === null || signer === null || fields.signatureParameters.length > 2) return null;
  const digest = DIGESTS[fields.signatureAlgorithm];
  if (digest === undefined) return null;
  try {
    issuer.verifier ??= createPublicKey({ key: Buffer.from(signer.publicKey), format: 'der', type: 'spki' });
  } catch {
    issuer.verifier = null;
  }
  if (issuer.verifier === null) return null;
  const ecdsa = fields.signatureAlgorithm.startsWith('1.2.840.10045.');
  try {
    const key = ecdsa ? { key: issuer.verifier, dsaEncoding: 'der' as const } : issuer.verifier;
    return verify(digest, fields.tbs, key, fields.signature);
  } catch {
    return false;
  }
}

interface Candidate {
  readonly der: Uint8Array;
  readonly parsed: Parsed;
  /** The same bytes as the trust anchor: the client sent the anchor along. */
  readonly isAnchor: boolean;
}

/**
 * Issuer certificates come back on every connection of a client (its delegation chain), so the
 * parsed forms of the last few are kept, keyed by the SHA-256 of their DER. Leaves are fresh
 * each time (and may carry an image), so they are not kept.
 */
const ISSUER_CACHE_SIZE = 128;
const issuerCache = new Map<string, Parsed>();
const anchorParsed = new WeakMap<TrustAnchor, Parsed>();

function parse(der: Uint8Array, keep: boolean): Parsed {
  if (!keep) return { cert: new x509.X509Certificate(der), keys: new Map() };
  const digest = createHash('sha256').update(der).digest('hex');
  const cached = issuerCache.get(digest);
  if (cached !== undefined) {
    issuerCache.delete(digest);
    issuerCache.set(digest, cached);
    return cached;
  }
  const parsed: Parsed = { cert: new x509.X509Certificate(der), keys: new Map(), signedBy: new WeakSet() };
  issuerCache.set(digest, parsed);
  if (issuerCache.size > ISSUER_CACHE_SIZE) issuerCache.delete(issuerCache.keys().next().value as string);
  return parsed;
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
 * ignored. 10 or more presented certificates are refused before any is parsed.
 */
export async function verifyClientChain(
  presented: readonly Uint8Array[],
  anchor: TrustAnchor,
  now: Date,
): Promise<Result<VerifiedPath, TlsError>> {
  if (presented.length === 0) return err('E_TLS_NO_CERTIFICATE', 'the client presented no certificate');
  if (presented.length >= MAX_CHAIN) {
    return err('E_TLS_CHAIN_TOO_LONG', 'certificate chain too long', { presented: presented.length });
  }
  const anchorValid = checkValidity(anchor.certificate, now);
  if (!anchorValid.ok) return anchorValid;
  const candidates: Candidate[] = [];
  for (const [index, der] of presented.entries()) {
    try {
      candidates.push({ der, parsed: parse(der, index > 0), isAnchor: sameBytes(der, anchor.der) });
    } catch (e) {
      return err('E_TLS_CERT_INVALID', `presented certificate ${index} does not parse: ${describeError(e)}`);
    }
  }
  const search = new PathSearch(candidates, anchor, now);
  const found = await search.walk([0]);
  if (found !== null) {
    return ok(
      found.map((i) => viewOf((candidates[i] as Candidate).parsed.cert, (candidates[i] as Candidate).der)),
    );
  }
  return { ok: false, error: search.failure ?? tlsError('E_TLS_UNTRUSTED', 'no path to the trust anchor') };
}

class PathSearch {
  readonly #certs: readonly Candidate[];
  readonly #anchor: TrustAnchor;
  readonly #now: Date;
  /** Memoized "is cert i signed by the key of j" (j = -1: the trust anchor). */
  readonly #signatures = new Map<string, Promise<boolean>>();
  readonly #anchorParsed: Parsed;
  #failure: { error: TlsError; rank: number } | null = null;
  #budget = SEARCH_BUDGET;

  constructor(certs: readonly Candidate[], anchor: TrustAnchor, now: Date) {
    this.#certs = certs;
    this.#anchor = anchor;
    this.#now = now;
    let parsed = anchorParsed.get(anchor);
    if (parsed === undefined) {
      parsed = { cert: anchor.certificate, facts: ok(anchor.facts), keys: new Map() };
      anchorParsed.set(anchor, parsed);
    }
    this.#anchorParsed = parsed;
  }

  get failure(): TlsError | null {
    return this.#failure?.error ?? null;
  }

  #record(error: TlsError, rank: number): void {
    if (this.#failure === null || rank > this.#failure.rank) this.#failure = { error, rank };
  }

  /** Depth-first: returns the first path (indices into the presented list) that passes every check. */
  async walk(path: readonly number[]): Promise<readonly number[] | null> {
    // Same-named, same-keyed certificates could otherwise make the search factorial.
    if (--this.#budget < 0) {
      this.#record(tlsError('E_TLS_UNTRUSTED', 'too many candidate paths'), RANK.pathCheck + 1);
      return null;
    }
    const last = (this.#certs[path.at(-1) as number] as Candidate).parsed;
    const lastIsAnchor = (this.#certs[path.at(-1) as number] as Candidate).isAnchor;
    if (lastIsAnchor) return this.#complete(path);
    // A name match whose signature fails is a look-alike; a linked issuer that led nowhere has
    // recorded its own failure further up.
    let nameMatched = false;
    let linked = false;
    if (last.cert.issuer === this.#anchor.certificate.subject) {
      nameMatched = true;
      if (await this.#signedBy(path.at(-1) as number, -1)) {
        linked = true;
        const sent = this.#certs.findIndex((c, i) => c.isAnchor && !path.includes(i));
        const done = await this.#complete(sent === -1 ? path : [...path, sent]);
        if (done !== null) return done;
      }
    }
    for (const [j, candidate] of this.#certs.entries()) {
      if (path.includes(j) || candidate.isAnchor || candidate.parsed.cert.subject !== last.cert.issuer)
        continue;
      nameMatched = true;
      if (!(await this.#signedBy(path.at(-1) as number, j))) continue;
      linked = true;
      const done = await this.walk([...path, j]);
      if (done !== null) return done;
    }
    if (linked) return null;
    if (nameMatched) {
      const what = `the signature of ${last.cert.subject} is not verified by the key of any certificate named ${last.cert.issuer}`;
      this.#record(tlsError('E_TLS_SIGNATURE', what), RANK.badSignature);
    } else {
      const what = `no issuer ${last.cert.issuer} of ${last.cert.subject} among the presented certificates and the trust anchor`;
      this.#record(tlsError('E_TLS_UNTRUSTED', what), RANK.noIssuer);
    }
    return null;
  }

  #signedBy(child: number, issuer: number): Promise<boolean> {
    const memo = `${child}<${issuer}`;
    let verdict = this.#signatures.get(memo);
    if (verdict === undefined) {
      const parsed = (this.#certs[child] as Candidate).parsed;
      const by = issuer === -1 ? this.#anchorParsed : (this.#certs[issuer] as Candidate).parsed;
      if (parsed.signedBy?.has(by)) return Promise.resolve(true);
      const cert = parsed.cert;
      const fast = verifySignature(parsed, by);
      verdict = (
        fast !== null
          ? Promise.resolve(fast)
          : this.#key(issuer, cert).then(
              (key) => key !== null && cert.verify({ publicKey: key, signatureOnly: true }),
            )
      )
        .then((verified) => {
          if (verified) parsed.signedBy?.add(by);
          return verified;
        })
        .catch(() => false);
      this.#signatures.set(memo, verdict);
    }
    return verdict;
  }

  /** The issuer's key imported for the child's signature algorithm, or null when it cannot be. */
  #key(issuer: number, child: x509.X509Certificate): Promise<CryptoKey | null> {
    let algorithm: Record<string, unknown>;
    try {
      algorithm = { ...(child.signatureAlgorithm as object) };
    } catch {
      return Promise.resolve(null);
    }
    const parsed = issuer === -1 ? this.#anchorParsed : (this.#certs[issuer] as Candidate).parsed;
    const memo = JSON.stringify(algorithm);
    let key = parsed.keys.get(memo);
    if (key === undefined) {
      const publicKey = parsed.cert.publicKey;
      const params = { ...(publicKey.algorithm as object), ...algorithm } as Parameters<
        typeof publicKey.export
      >[0];
      key = (publicKey.export(params, ['verify']) as Promise<CryptoKey>).catch(() => null);
      parsed.keys.set(memo, key);
    }
    return key;
  }

  async #complete(path: readonly number[]): Promise<readonly number[] | null> {
    if (path.length >= MAX_CHAIN) {
      this.#record(tlsError('E_TLS_CHAIN_TOO_LONG', 'certificate chain too long'), Number.POSITIVE_INFINITY);
      return null;
    }
    const checked = checkPath(
      path.map((i) => this.#certs[i] as Candidate),
      this.#anchor,
      this.#now,
    );
    if (checked.ok) return path;
    this.#record(checked.error, RANK.pathCheck);
    return null;
  }
}

/** Everything but the signatures (checked while linking), leaf first. */
function checkPath(path: readonly Candidate[], anchor: TrustAnchor, now: Date): Result<void, TlsError> {
  /** Non-self-issued intermediates seen so far below the certificate being checked. */
  let intermediatesBelow = 0;
  for (const [position, { parsed, isAnchor }] of path.entries()) {
    const cert = parsed.cert;
    parsed.facts ??= inspect(cert);
    const facts = parsed.facts;
    if (!facts.ok) return facts;
    const f = facts.value;
    if (f.unprocessedCritical.length > 0) {
      return err(
        'E_TLS_CRITICAL_EXTENSION',
        `certificate ${cert.subject} has an unsupported critical extension ${f.unprocessedCritical.join(', ')}`,
        { extensions: f.unprocessedCritical },
      );
    }
    if (isAnchor) break;
    const algorithm = checkAlgorithm(cert);
    if (!algorithm.ok) return algorithm;
    const valid = checkValidity(cert, now);
    if (!valid.ok) return valid;
    if (position === 0) {
      const leaf = checkLeafUsage(cert, f);
      if (!leaf.ok) return leaf;
      continue;
    }
    const issuer = checkIssuer(cert, f, intermediatesBelow);
    if (!issuer.ok) return issuer;
    if (!f.selfIssued) intermediatesBelow++;
  }
  return checkIssuer(anchor.certificate, anchor.facts, intermediatesBelow);
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.compare(a, b) === 0;
}
