// Public surface of src/tls: the mutual-TLS endpoint (for petreld, in-process or as
// `petreld tls-endpoint`), the remote client's transport, certificate-path verification and
// identity, and the PKI tooling.

export { decodeDer, type PathCertificate, viewOf } from './certs.js';
export {
  loadTrustAnchor,
  MAX_CHAIN,
  type TrustAnchor,
  type VerifiedPath,
  verifyClientChain,
} from './chain.js';
export {
  loadTlsEndpointOptions,
  parseTlsEndpointArgs,
  runTlsEndpoint,
  TLS_ENDPOINT_USAGE,
  type TlsEndpointArgs,
} from './cli.js';
export { createRemoteTransport, type RemoteTransportOptions } from './client.js';
export { createRequest, signRequest } from './csr.js';
export {
  createTlsEndpoint,
  type SocketPaths,
  socketPaths,
  TLS_DEFAULTS,
  type TlsEndpoint,
  type TlsEndpointOptions,
} from './endpoint.js';
export type { TlsError, TlsErrorCode } from './errors.js';
export {
  authorize,
  type ChainPolicy,
  checkChainPolicies,
  deriveIdentity,
  type Identity,
  leafCommandAllowed,
} from './identity.js';
export {
  exportPrivateKey,
  generateKey,
  importPrivateKey,
  KEY_TYPES,
  type KeyPair,
  type KeyType,
} from './keys.js';
export {
  type CommandLeaf,
  createRootCa,
  type Issuer,
  issueCommandLeaf,
  issueDelegation,
  leafCommonName,
} from './pki.js';
