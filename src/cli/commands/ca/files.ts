// The CA directory's files for `petrel ca`: keys reused when present or made 0600, certificates
// written and recorded in DIR/db, and an issuing CA read back (its chain and its own key).

import { webcrypto } from 'node:crypto';
import { appendFile, chmod, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { err, ok, type PetrelError, type Result } from '../../../resources/errors.js';
import { type Path, printPath } from '../../../resources/name.js';
import { decodeDer, viewOf } from '../../../tls/certs.js';
import { describeError } from '../../../tls/errors.js';
import { delegationOf } from '../../../tls/identity.js';
import {
  exportPrivateKey,
  generateKey,
  importPrivateKey,
  type KeyPair,
  type KeyType,
} from '../../../tls/keys.js';
import type { Issuer } from '../../../tls/pki.js';
import { x509 } from '../../../tls/x509.js';
import type { CliIo } from '../../command.js';
import type { Values } from './options.js';

/**
 * The signing CA: --issuer-cert/--issuer-key, else the one for `parent` in --dir. When `parent`
 * is given, the issuer's own chain must spell that path, so `delegate a:b` cannot be signed by
 * the CA of some other path.
 */
export async function loadIssuer(values: Values, parent: Path | null): Promise<Result<Issuer, PetrelError>> {
  const base = parent === null || parent.length === 0 ? null : join(values.dir, printPath(parent));
  const certFile = values['issuer-cert'] ?? (base === null ? join(values.dir, 'cacert.pem') : `${base}.pem`);
  const keyFile = values['issuer-key'] ?? (base === null ? join(values.dir, 'ca.key') : `${base}.key`);
  const issuer = await readIssuer(certFile, keyFile);
  if (!issuer.ok || parent === null) return issuer;
  const delegation = delegationOf(issuer.value.chain.map((c) => viewOf(c)));
  if (!delegation.ok) return delegation;
  if (printPath(delegation.value.path) !== printPath(parent)) {
    const has = `${printPath(delegation.value.path)}:`;
    return err('E_PKI_PATH', `the issuing CA in ${certFile} delegates ${has}, not ${printPath(parent)}:`);
  }
  return issuer;
}

/** A CA's certificate file (its chain) and its key, which must be the certificate's. */
export async function readIssuer(certFile: string, keyFile: string): Promise<Result<Issuer, PetrelError>> {
  const certBytes = await readBytes(certFile);
  if (!certBytes.ok) return certBytes;
  let chain: x509.X509Certificate[];
  try {
    chain = decodeDer(certBytes.value).map((der) => new x509.X509Certificate(der));
  } catch (e) {
    return err('E_PKI_CERT', `${certFile}: not a certificate (${describeError(e)})`);
  }
  const head = chain[0];
  if (head === undefined) return err('E_PKI_CERT', `${certFile} holds no certificate`);
  const keyBytes = await readBytes(keyFile);
  if (!keyBytes.ok) return keyBytes;
  const key = await importPrivateKey(keyBytes.value);
  if (!key.ok) return err('E_PKI_KEY', `${keyFile}: ${key.error.message}`);
  if (!(await sameKey(head, key.value))) {
    return err('E_PKI_KEY', `${keyFile} is not the key of the certificate in ${certFile}`);
  }
  return ok({ chain, key: key.value });
}

async function sameKey(cert: x509.X509Certificate, key: KeyPair): Promise<boolean> {
  const spki = new Uint8Array(await webcrypto.subtle.exportKey('spki', key.publicKey));
  return Buffer.compare(spki, new Uint8Array(cert.publicKey.rawData)) === 0;
}

export async function loadOrCreateKey(
  file: string,
  type: KeyType,
  io: CliIo,
): Promise<Result<KeyPair, PetrelError>> {
  if (await exists(file)) {
    const bytes = await readBytes(file);
    if (!bytes.ok) return bytes;
    const key = await importPrivateKey(bytes.value);
    if (!key.ok) return err('E_PKI_KEY', `${file}: ${key.error.message}`);
    io.stdout(`reusing key ${file}\n`);
    return key;
  }
  const key = await generateKey(type);
  await writeFile(file, await exportPrivateKey(key), { mode: 0o600, flag: 'wx' });
  await chmod(file, 0o600);
  io.stdout(`wrote key ${file} (${type})\n`);
  return ok(key);
}

export async function writeCertificates(
  file: string,
  chain: readonly x509.X509Certificate[],
  io: CliIo,
): Promise<void> {
  await writeFile(
    file,
    chain
      .map((c) => c.toString('pem'))
      .join('\n')
      .concat('\n'),
    { mode: 0o644 },
  );
  const cert = chain[0] as x509.X509Certificate;
  io.stdout(`wrote ${file}: ${cert.subject}, valid until ${cert.notAfter.toISOString()}\n`);
}

export async function record(dir: string, cert: x509.X509Certificate): Promise<void> {
  await appendFile(join(dir, 'db'), `${cert.serialNumber} ${viewOf(cert).commonName ?? ''}\n`);
}

export async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}

export async function readBytes(file: string): Promise<Result<Uint8Array, PetrelError>> {
  try {
    return ok(new Uint8Array(await readFile(file)));
  } catch (e) {
    return err('E_PKI_FILE', `cannot read ${file}: ${describeError(e)}`);
  }
}
