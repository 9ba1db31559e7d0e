// Certificate requests: made with a command in the Albatross extension (the client's --csr mode)
// and signed by a CA into the profile the command calls for (semantics §15, `sign`).

import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import { ALBATROSS_OID, decodeCertExtension, encodeCertExtension } from '../wire/index.js';
import type { Command } from '../wire/types.js';
import { decodeDer } from './certs.js';
import { describeError } from './errors.js';
import { type KeyPair, signingAlgorithm } from './keys.js';
import {
  checkCommand,
  checkDelegation,
  DEFAULT_DAYS,
  days,
  type Issued,
  type Issuer,
  issue,
  type Profile,
  validityFor,
} from './pki.js';
import { x509 } from './x509.js';

export async function createRequest(
  commonName: string,
  command: Command | null,
  key: KeyPair,
): Promise<x509.Pkcs10CertificateRequest> {
  const extensions: x509.Extension[] = [];
  if (command !== null) {
    const value = encodeCertExtension(command);
    if (!value.ok) throw new Error(`cannot encode the request's command: ${value.error.message}`);
    extensions.push(new x509.Extension(ALBATROSS_OID, false, value.value));
  }
  return x509.Pkcs10CertificateRequestGenerator.create({
    name: new x509.Name([{ CN: [commonName] }]),
    extensions,
    signingAlgorithm: signingAlgorithm(key.type),
    keys: { privateKey: key.privateKey, publicKey: key.publicKey },
  });
}

export interface SignRequestOptions {
  /** Lifetime in days; the profile's default (delegation 365, command 1, server 365) otherwise. */
  readonly days?: number;
  readonly now?: Date;
}

/**
 * Signs a request (PEM or DER): without an Albatross extension it becomes a server certificate,
 * with `policy add` a delegation (usable, and inside the signing CA's policy), with any other
 * command a command leaf (a create must fit the CA's policy). The extension is re-encoded.
 */
export async function signRequest(
  issuer: Issuer,
  request: string | Uint8Array,
  options: SignRequestOptions = {},
): Promise<Result<Issued, PetrelError>> {
  let csr: x509.Pkcs10CertificateRequest;
  try {
    const der = decodeDer(request)[0];
    if (der === undefined) return err('E_PKI_CSR', 'no certificate request found');
    csr = new x509.Pkcs10CertificateRequest(der);
  } catch (e) {
    return err('E_PKI_CSR', `not a certificate request: ${describeError(e)}`);
  }
  if (!(await csr.verify().catch(() => false))) {
    return err('E_PKI_CSR', 'the certificate request is not signed by its own key');
  }
  const commonName = csr.subjectName.getField('CN')[0] ?? null;
  const found = albatrossCommand(csr);
  if (!found.ok) return found;
  const command = found.value;
  let profile: Profile = 'server';
  if (command?.type === 'policy-add') {
    const fits = checkDelegation(issuer, command.policy);
    if (!fits.ok) return fits;
    profile = 'delegation';
  } else if (command !== null) {
    const fits = checkCommand(issuer, command);
    if (!fits.ok) return fits;
    profile = 'command';
  }
  const lifetime = options.days ?? DEFAULT_DAYS[profile];
  const issued = await issue({
    profile,
    commonName,
    publicKey: await csr.publicKey.export(),
    validity: validityFor(options.now ?? new Date(), days(lifetime)),
    ...(command === null ? {} : { command }),
    issuer,
  });
  return ok(issued);
}

function albatrossCommand(csr: x509.Pkcs10CertificateRequest): Result<Command | null, PetrelError> {
  const extension = csr.extensions.find((e) => e.type === ALBATROSS_OID);
  if (extension === undefined) return ok(null);
  if (extension.critical) return err('E_PKI_CSR', 'the albatross extension is marked critical');
  const command = decodeCertExtension(new Uint8Array(extension.value));
  return command.ok ? command : err('E_PKI_CSR', `the request's command: ${command.error.message}`);
}
