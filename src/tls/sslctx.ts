// What the TLS endpoint sets on its OpenSSL context that Node does not expose, through
// native/build/sslctx.node: certificate lists up to what TLS allows (a Certificate message's
// length has 24 bits) instead of OpenSSL's 100 KiB, as the stock albatross-client (2.0-2.7)
// embeds a create's whole image in its leaf; no chain verification by OpenSSL (chain.ts does
// it); no TLS 1.3 session tickets.
//
// native/sslctx/sslctx.cc says why an addon on node's C++ headers and not Node-API. It is built
// for the node that builds it and the build checks that node (native/sslctx/check.cjs); Petrel
// supports Node 20. What an unauthenticated peer may send before its chain is checked is bounded
// by the endpoint's admission, not here.

import { createRequire } from 'node:module';
import type { SecureContext } from 'node:tls';
import { types } from 'node:util';
import { bundledNativePath } from '../host/native.js';
import { err, ok, type Result } from '../resources/errors.js';
import { describeError, type TlsError } from './errors.js';

/** 16 MiB: above any length a handshake message can state, so TLS's own limit is the limit. */
export const MAX_CERTIFICATE_LIST = 16 * 1024 * 1024;

interface Addon {
  setMaxCertList(external: unknown, bytes: number): number;
  skipChainVerification(external: unknown): void;
  noTickets(external: unknown): number;
}

let addon: Addon | string | null = null;

function load(): Addon | string {
  if (addon !== null) return addon;
  const file = bundledNativePath('sslctx.node');
  if (file === null) addon = 'sslctx.node: no package root found';
  else {
    try {
      addon = createRequire(import.meta.url)(file) as Addon;
    } catch (cause) {
      addon = `sslctx.node not loaded from ${file} (run \`make -C native\`): ${describeError(cause)}`;
    }
  }
  return addon;
}

/**
 * Sets, on the SSL_CTX behind `context` (every connection made with it afterwards inherits it):
 *
 * - certificate lists up to MAX_CERTIFICATE_LIST;
 * - no chain verification by OpenSSL. Node requests client certificates with a verify callback
 *   that accepts every verdict, so OpenSSL's work was thrown away, and it cost a chain search
 *   and a copy of each certificate's signed part per signature (a leaf may be an image), every
 *   session. chain.ts verifies the chain; TLS still checks the client's CertificateVerify with
 *   the leaf's key. Node then calls every client `authorized`: the endpoint never reads that;
 * - no TLS 1.3 session tickets: SSL_OP_NO_TICKET only makes them stateful, so OpenSSL still made
 *   and sent two per session that no connection can use, and held the client's Certificate
 *   message (a leaf may be an image) until they were out, past the point where the endpoint
 *   reads the chain.
 *
 * Refused with E_TLS_CERT_LIMIT when the addon is missing or this node hands out no SSL_CTX: the
 * endpoint would otherwise refuse every stock-client create with an opaque handshake error.
 */
export function prepareServerContext(context: SecureContext): Result<void, TlsError> {
  const loaded = load();
  if (typeof loaded === 'string') return err('E_TLS_CERT_LIMIT', loaded);
  // Only a real External reaches the addon, which reads it as an SSL_CTX*.
  const handle = (context as { context?: { _external?: unknown } }).context?._external;
  if (!types.isExternal(handle)) {
    return err('E_TLS_CERT_LIMIT', `node ${process.version} exposes no SSL_CTX for a SecureContext`);
  }
  try {
    const now = loaded.setMaxCertList(handle, MAX_CERTIFICATE_LIST);
    if (now !== MAX_CERTIFICATE_LIST) {
      return err('E_TLS_CERT_LIMIT', `OpenSSL kept its certificate-list limit at ${now} bytes`);
    }
    loaded.skipChainVerification(handle);
    const tickets = loaded.noTickets(handle);
    if (tickets !== 0) return err('E_TLS_CERT_LIMIT', `OpenSSL still sends ${tickets} session tickets`);
  } catch (cause) {
    return err('E_TLS_CERT_LIMIT', `sslctx.node: ${describeError(cause)}`);
  }
  return ok(undefined);
}
