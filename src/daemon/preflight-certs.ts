// Preflight checks of the certificates petreld serves with: the TLS endpoint's and the web API's
// (CA, certificate and key load and match, valid now, a WARN when one expires soon).

import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { keyPath, type PetrelConfig } from './config.js';
import { type CheckResult, failed, type Outcome, passed, result } from './preflight-result.js';

/** A certificate that expires within this is reported as WARN. */
const EXPIRY_WARNING_MS = 30 * 24 * 3600 * 1000;

async function readPem(file: string, what: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    throw new Error(`${what} ${file} cannot be read: ${(error as NodeJS.ErrnoException).code ?? error}`);
  }
}

function parseCert(pem: string, file: string, what: string): X509Certificate {
  try {
    return new X509Certificate(pem);
  } catch (error) {
    throw new Error(`${what} ${file} is not a certificate: ${(error as Error).message}`);
  }
}

function validity(cert: X509Certificate, file: string, what: string, now: Date): string | null {
  const from = Date.parse(cert.validFrom);
  const to = Date.parse(cert.validTo);
  if (now.getTime() < from) throw new Error(`${what} ${file} is not valid before ${cert.validFrom}`);
  if (now.getTime() > to) throw new Error(`${what} ${file} expired on ${cert.validTo}`);
  return to - now.getTime() < EXPIRY_WARNING_MS ? `${what} ${file} expires on ${cert.validTo}` : null;
}

interface CertificateFiles {
  readonly ca: string;
  readonly cert: string;
  readonly key: string;
}

type FileKey = 'tlsCa' | 'tlsCert' | 'tlsKey' | 'webCert' | 'webKey';
const TLS_FILES = ['tlsCa', 'tlsCert', 'tlsKey'] as const;
const WEB_FILES = ['tlsCa', 'webCert', 'webKey'] as const;

/** The CA, certificate and key files of `keys` (in that order), or the FAIL naming those not set. */
function configuredFiles(
  config: PetrelConfig,
  keys: readonly [ca: FileKey, cert: FileKey, key: FileKey],
  hint: string,
): CertificateFiles | { readonly missing: Outcome } {
  const [ca, cert, key] = [config[keys[0]], config[keys[1]], config[keys[2]]];
  if (ca === null || cert === null || key === null) {
    const missing = keys.filter((name) => config[name] === null).map(keyPath);
    return { missing: failed(`${missing.join(', ')} not configured`, hint) };
  }
  return { ca, cert, key };
}

/** CA, certificate and key load; the key matches; the CA signed the certificate; none expired. */
async function checkTls(config: PetrelConfig, now: Date): Promise<Outcome & { warning?: string }> {
  const files = configuredFiles(config, TLS_FILES, 'set --tls-ca, --tls-cert and --tls-key');
  if ('missing' in files) return files.missing;
  return checkCertificate(files, 'check the files given as --tls-ca, --tls-cert and --tls-key', now);
}

/** The web API's certificate (`webCert`, `webKey`): as the TLS endpoint's, and one a browser takes. */
async function checkWeb(config: PetrelConfig, now: Date): Promise<Outcome & { warning?: string }> {
  const files = configuredFiles(config, WEB_FILES, 'set --tls-ca, --web-cert and --web-key');
  if ('missing' in files) return files.missing;
  return checkCertificate(
    files,
    'petrel ca web-cert NAME|ADDRESS... makes one browsers take',
    now,
    (cert) => {
      // Browsers ignore the CN, and Chromium refuses an Ed25519 server certificate.
      if (cert.subjectAltName === undefined)
        return `certificate ${files.cert} has no subjectAltName, which browsers require`;
      const type = cert.publicKey.asymmetricKeyType;
      if (type !== 'ec' && type !== 'rsa')
        return `certificate ${files.cert} has an ${type} key, which browsers refuse`;
      return null;
    },
  );
}

/** A certificate and key signed by the CA, valid now; `more` adds a check of its own. */
async function checkCertificate(
  files: CertificateFiles,
  hint: string,
  now: Date,
  more: (cert: X509Certificate) => string | null = () => null,
): Promise<Outcome & { warning?: string }> {
  try {
    const ca = parseCert(await readPem(files.ca, 'CA'), files.ca, 'CA');
    const cert = parseCert(await readPem(files.cert, 'certificate'), files.cert, 'certificate');
    const keyPem = await readPem(files.key, 'key');
    let key: ReturnType<typeof createPrivateKey>;
    try {
      key = createPrivateKey(keyPem);
    } catch {
      throw new Error(`key ${files.key} is not a private key`);
    }
    if (!ca.ca)
      throw new Error(`CA ${files.ca} is not a CA certificate (basicConstraints CA:FALSE or missing)`);
    if (!cert.checkPrivateKey(key))
      throw new Error(`key ${files.key} does not match certificate ${files.cert}`);
    if (!cert.verify(ca.publicKey))
      throw new Error(`certificate ${files.cert} is not signed by CA ${files.ca}`);
    const refused = more(cert);
    if (refused !== null) throw new Error(refused);
    const warnings = [
      validity(ca, files.ca, 'CA', now),
      validity(cert, files.cert, 'certificate', now),
    ].filter((w): w is string => w !== null);
    const detail = `certificate ${cert.subject.replace(/\n/gu, ', ')} signed by the CA, key matches, valid until ${cert.validTo}`;
    return warnings.length > 0 ? { ...passed(detail), warning: warnings.join('; ') } : passed(detail);
  } catch (error) {
    return failed((error as Error).message, hint);
  }
}

export async function tlsCheck(config: PetrelConfig, fatal: boolean, now: Date): Promise<CheckResult> {
  if (
    config.tlsListen === null &&
    config.tlsCa === null &&
    config.tlsCert === null &&
    config.tlsKey === null
  ) {
    return result('tls', passed('not configured (no --tls-listen)'), fatal);
  }
  const outcome = await checkTls(config, now);
  if (outcome.ok && outcome.warning !== undefined) {
    return result('tls', failed(outcome.warning, 'renew the certificate'), fatal, true);
  }
  return result('tls', outcome, fatal);
}

export async function webCheck(config: PetrelConfig, fatal: boolean, now: Date): Promise<CheckResult> {
  if (config.webListen === null && config.webCert === null && config.webKey === null) {
    return result('web', passed('not configured (no --web-listen)'), fatal);
  }
  const outcome = await checkWeb(config, now);
  if (outcome.ok && outcome.warning !== undefined) {
    return result('web', failed(outcome.warning, 'renew the certificate (petrel ca web-cert)'), fatal, true);
  }
  return result('web', outcome, fatal);
}
