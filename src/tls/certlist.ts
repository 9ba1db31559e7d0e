// The largest certificate list the TLS endpoint accepts from a client: what TLS allows (a
// Certificate message's length has 24 bits) instead of OpenSSL's 100 KiB, through certlist.node.
// The stock albatross-client (2.0-2.7) embeds a create's whole image in its leaf.
//
// native/certlist/certlist.cc says why an addon on node's C++ headers and not Node-API. It is
// built for the node that builds it and the build checks that node (native/certlist/check.cjs);
// Petrel supports Node 20. What an unauthenticated peer may send before its chain is checked is
// bounded by the endpoint's admission, not here.

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
}

let addon: Addon | string | null = null;

function load(): Addon | string {
  if (addon !== null) return addon;
  const file = bundledNativePath('certlist.node');
  if (file === null) addon = 'certlist.node: no package root found';
  else {
    try {
      addon = createRequire(import.meta.url)(file) as Addon;
    } catch (cause) {
      addon = `certlist.node not loaded from ${file} (run \`make -C native\`): ${describeError(cause)}`;
    }
  }
  return addon;
}

/**
 * Lets the SSL_CTX behind `context` accept certificate lists up to MAX_CERTIFICATE_LIST (every
 * connection made with it afterwards inherits the limit). Refused with E_TLS_CERT_LIMIT when the
 * addon is missing or this node hands out no SSL_CTX: the endpoint would otherwise refuse
 * every stock-client create with an opaque handshake error.
 */
export function acceptLargeCertificates(context: SecureContext): Result<void, TlsError> {
  const loaded = load();
  if (typeof loaded === 'string') return err('E_TLS_CERT_LIMIT', loaded);
  // Only a real External reaches the addon, which reads it as an SSL_CTX*.
  const handle = (context as { context?: { _external?: unknown } }).context?._external;
  if (!types.isExternal(handle)) {
    return err('E_TLS_CERT_LIMIT', `node ${process.version} exposes no SSL_CTX for a SecureContext`);
  }
  const now = loaded.setMaxCertList(handle, MAX_CERTIFICATE_LIST);
  if (now !== MAX_CERTIFICATE_LIST) {
    return err('E_TLS_CERT_LIMIT', `OpenSSL kept its certificate-list limit at ${now} bytes`);
  }
  return ok(undefined);
}
