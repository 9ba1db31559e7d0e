// The TLS endpoint's refusal vocabulary: every reason a client certificate, a handshake or a
// stream is refused is a PetrelError with an E_TLS_ code (texts from semantics §14.2 where given).

import { err, type PetrelError } from '../resources/errors.js';

export type TlsErrorCode =
  /** The trust anchor file is unusable (not exactly one CA certificate). */
  | 'E_TLS_ANCHOR'
  /** sslctx.node cannot set the endpoint's OpenSSL context (not built, or another node). */
  | 'E_TLS_CERT_LIMIT'
  /** The client presented no certificate. */
  | 'E_TLS_NO_CERTIFICATE'
  /** `empty chain`. */
  | 'E_TLS_CHAIN_EMPTY'
  /** `certificate chain too long`: 10 or more, presented or on the path. */
  | 'E_TLS_CHAIN_TOO_LONG'
  /** A certificate that does not parse. */
  | 'E_TLS_CERT_INVALID'
  /** No path from the leaf to the trust anchor. */
  | 'E_TLS_UNTRUSTED'
  /** A signature that the issuer's key does not verify, or a disallowed signature algorithm. */
  | 'E_TLS_SIGNATURE'
  | 'E_TLS_EXPIRED'
  | 'E_TLS_NOT_YET_VALID'
  /** An issuer without basicConstraints CA:TRUE. */
  | 'E_TLS_NOT_CA'
  /** An issuer without keyCertSign, or a leaf whose key usage forbids TLS client use. */
  | 'E_TLS_KEY_USAGE'
  | 'E_TLS_PATH_LENGTH'
  /** A critical extension the verifier does not process (the Albatross one included). */
  | 'E_TLS_CRITICAL_EXTENSION'
  /** An Albatross extension that does not decode (the decoder's message). */
  | 'E_TLS_EXTENSION'
  /** `leaf certificate does not contain an albatross extension`. */
  | 'E_TLS_NO_EXTENSION'
  /** `unexpected wire …`: an intermediate carrying anything but policy add. */
  | 'E_TLS_UNEXPECTED_WIRE'
  /** `… may not have an empty name`. */
  | 'E_TLS_EMPTY_NAME'
  /** A CN that is not a valid label. */
  | 'E_TLS_NAME'
  /** `unexpected command`: a leaf command the endpoint does not forward. */
  | 'E_TLS_COMMAND'
  /** A chain policy that exceeds the one above it. */
  | 'E_TLS_POLICY'
  | 'E_TLS_HANDSHAKE'
  /** More sessions of one identity's path at once than `maxConnectionsPerIdentity`. */
  | 'E_TLS_TOO_MANY_SESSIONS'
  /** A frame from the client began and then paused longer than `frameStallTimeout`. */
  | 'E_TLS_FRAME_STALLED'
  /** A frame above maxFrameBytes, or a streamed image above it. */
  | 'E_TLS_FRAME_TOO_LARGE'
  /** The client's stream ended or broke where data was due. */
  | 'E_TLS_STREAM'
  /** `petreld tls-endpoint` flags that cannot be understood, or files that cannot be read. */
  | 'E_TLS_USAGE'
  /** A web API token that is not one: prefix, alphabet, length or DER framing (token.ts). */
  | 'E_TOKEN_MALFORMED'
  /** A web API token past its expiry. */
  | 'E_TOKEN_EXPIRED'
  /** A web API token, or a certificate on its path, on petreld's deny-list. */
  | 'E_TOKEN_REVOKED'
  /** A fleet deployment proof that is not one: not DER certificates, no payload, no create (deployment-proof.ts). */
  | 'E_DEPLOY_MALFORMED'
  /** A proof whose chain does not verify: a bad signature, another purpose (a token, a TLS client), a broken chain. */
  | 'E_DEPLOY_FORGED'
  /** A proof signed under another CA than the node's. */
  | 'E_DEPLOY_FOREIGN_CA'
  /** A registry row that differs from what its proof signed (the field is named). */
  | 'E_DEPLOY_ALTERED'
  /** A proof or its delegation past its expiry (or, for a wrong clock, not valid yet). */
  | 'E_DEPLOY_EXPIRED'
  /** A proof, or a certificate of its chain, on the deny-list. */
  | 'E_DEPLOY_REVOKED'
  /** A deployment its delegation may not ask for: a name outside its path, more than its policy allows. */
  | 'E_DEPLOY_POLICY';

export type TlsError = PetrelError<TlsErrorCode>;

export function tlsError(
  code: TlsErrorCode,
  message: string,
  details?: Readonly<Record<string, unknown>>,
): TlsError {
  return err(code, message, details).error;
}

/** The message of anything thrown, for error values and logs. */
export function describeError(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
