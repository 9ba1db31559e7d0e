// `petrel ca init|delegate|sign`: the CA files of a Petrel (or Albatross) deployment, a thin
// shell over src/tls/pki.ts. Keys are written 0600, reused when present, and never printed.

import { webcrypto } from 'node:crypto';
import { appendFile, chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, extname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { err, ok, type PetrelError, type Result } from '../../resources/errors.js';
import { type Path, parsePath, printPath } from '../../resources/name.js';
import { makePolicy } from '../../resources/policy.js';
import { decodeDer, viewOf } from '../../tls/certs.js';
import { signRequest } from '../../tls/csr.js';
import { describeError } from '../../tls/errors.js';
import { delegationOf } from '../../tls/identity.js';
import {
  exportPrivateKey,
  generateKey,
  importPrivateKey,
  type KeyPair,
  type KeyType,
  parseKeyType,
} from '../../tls/keys.js';
import {
  createRootCa,
  DEFAULT_DAYS,
  days,
  type Issued,
  type Issuer,
  issue,
  issueDelegation,
  validityFor,
} from '../../tls/pki.js';
import { x509 } from '../../tls/x509.js';
import { type CliCommand, type CliIo, EXIT } from '../command.js';

const USAGE = `usage:
  petrel ca init [--dir DIR] [--name NAME] [--server-name NAME] [--key-type TYPE]
                 [--days N] [--server-days N]
  petrel ca delegate PATH --vms N [--mem MB] [--cpus LIST] [--block MB] [--bridge NAME]...
                 [--days N] [--dir DIR] [--issuer-cert FILE --issuer-key FILE] [--key-type TYPE]
  petrel ca sign CSR [--dir DIR] [--issuer-cert FILE --issuer-key FILE] [--days N] [--out FILE]

init      a self-signed CA (DIR/cacert.pem, DIR/ca.key; CN --name, default "ca", --days 3650)
          and the server certificate the TLS endpoint presents (DIR/server.pem, DIR/server.key;
          CN --server-name, default "server", --server-days 365).
delegate  an intermediate CA for PATH carrying a policy: --vms unikernels, --mem MB (512),
          --cpus CPU ids (comma-separated, default 0), --block MB (absent: no block storage),
          --bridge names (repeat or comma-separate). It must be usable and fit inside the
          issuing CA's own policy. The issuer of a:b is DIR/a.pem + DIR/a.key (the root CA for
          a top-level PATH) unless --issuer-cert/--issuer-key say otherwise. Writes DIR/PATH.pem
          (the certificate and the issuer chain, what clients use as --ca) and DIR/PATH.key.
          --days 365.
sign      signs a certificate request with the root CA (or --issuer-cert/--issuer-key):
          a policy add becomes a delegation (365 days), another command a command
          certificate (1 day), no command a server certificate (365 days). Writes --out,
          default the request's file name with .pem.

Key types: ed25519 (default), p256, p384, p521, rsa2048, rsa4096. Existing key files are reused.
Serial numbers and CNs are appended to DIR/db.

Examples:
  petrel ca init --dir /etc/petrel/ca
  petrel ca delegate alice --vms 2 --mem 64 --cpus 0,1 --bridge service --dir /etc/petrel/ca
  petrel ca delegate alice:bob --vms 1 --mem 32 --dir /etc/petrel/ca

Exit status: 0 on success, 1 when the work failed, 2 on a usage error.
`;

const OPTIONS = {
  dir: { type: 'string', default: '.' },
  name: { type: 'string', default: 'ca' },
  'server-name': { type: 'string', default: 'server' },
  'key-type': { type: 'string', default: 'ed25519' },
  days: { type: 'string' },
  'server-days': { type: 'string' },
  vms: { type: 'string' },
  mem: { type: 'string', default: '512' },
  cpus: { type: 'string', default: '0' },
  block: { type: 'string' },
  bridge: { type: 'string', multiple: true },
  'issuer-cert': { type: 'string' },
  'issuer-key': { type: 'string' },
  out: { type: 'string', short: 'o' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];

class Usage extends Error {}

export const caCommand: CliCommand = {
  name: 'ca',
  usage: USAGE,
  run: async (args, io) => {
    try {
      const { values, positionals } = parseArgs({
        args: [...args],
        options: OPTIONS,
        allowPositionals: true,
      });
      if (values.help === true) {
        io.stdout(USAGE);
        return EXIT.OK;
      }
      const [action, target, ...extra] = positionals;
      if (extra.length > 0) throw new Usage(`unexpected argument '${extra[0]}'`);
      const result = await dispatch(action, target, values, io);
      if (result.ok) return EXIT.OK;
      io.stderr(`petrel ca: ${result.error.message}\n`);
      return EXIT.FAILURE;
    } catch (e) {
      if (e instanceof Usage || (e instanceof TypeError && 'code' in e)) {
        io.stderr(`petrel ca: ${e.message}\n\n${USAGE}`);
        return EXIT.USAGE;
      }
      throw e;
    }
  },
};

function dispatch(action: string | undefined, target: string | undefined, values: Values, io: CliIo) {
  switch (action) {
    case 'init':
      if (target !== undefined) throw new Usage(`unexpected argument '${target}'`);
      return init(values, io);
    case 'delegate':
      if (target === undefined) throw new Usage('delegate needs a PATH');
      return delegate(target, values, io);
    case 'sign':
      if (target === undefined) throw new Usage('sign needs a CSR file');
      return sign(target, values, io);
    default:
      throw new Usage(action === undefined ? 'missing init, delegate or sign' : `unknown action '${action}'`);
  }
}

function count(text: string | undefined, flag: string, fallback?: number): number {
  if (text === undefined) {
    if (fallback === undefined) throw new Usage(`--${flag} is required`);
    return fallback;
  }
  const n = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(n))
    throw new Usage(`--${flag} must be a number, not '${text}'`);
  return n;
}

function keyType(values: Values): KeyType {
  const type = parseKeyType(values['key-type']);
  if (!type.ok) throw new Usage(type.error.message);
  return type.value;
}

async function init(values: Values, io: CliIo): Promise<Result<void, PetrelError>> {
  const dir = values.dir;
  if (await exists(join(dir, 'cacert.pem'))) {
    return err('E_PKI_EXISTS', `${join(dir, 'cacert.pem')} exists; remove it or choose another --dir`);
  }
  // The CA directory holds private keys: only its owner may enter it.
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const now = new Date();
  const caKey = await loadOrCreateKey(join(dir, 'ca.key'), keyType(values), io);
  if (!caKey.ok) return caKey;
  const lifetime = count(values.days, 'days', DEFAULT_DAYS.ca);
  const root = await createRootCa(caKey.value, values.name, validityFor(now, days(lifetime)));
  await writeCertificates(join(dir, 'cacert.pem'), [root.chain[0] as x509.X509Certificate], io);
  await record(dir, root.chain[0] as x509.X509Certificate);
  const serverKey = await loadOrCreateKey(join(dir, 'server.key'), keyType(values), io);
  if (!serverKey.ok) return serverKey;
  const server = await issue({
    profile: 'server',
    commonName: values['server-name'],
    publicKey: serverKey.value.publicKey,
    validity: validityFor(now, days(count(values['server-days'], 'server-days', DEFAULT_DAYS.server))),
    issuer: root,
  });
  await writeCertificates(join(dir, 'server.pem'), [server.certificate], io);
  await record(dir, server.certificate);
  return ok(undefined);
}

async function delegate(pathText: string, values: Values, io: CliIo): Promise<Result<void, PetrelError>> {
  const path = parsePath(pathText);
  if (!path.ok) throw new Usage(path.error.message);
  const label = path.value.at(-1);
  if (label === undefined) throw new Usage('PATH must name at least one label');
  const parent = path.value.slice(0, -1);
  const policy = makePolicy({
    vms: count(values.vms, 'vms'),
    memory: count(values.mem, 'mem'),
    cpuids: list(values.cpus).map((id) => count(id, 'cpus')),
    block: values.block === undefined ? null : count(values.block, 'block'),
    bridges: (values.bridge ?? []).flatMap(list),
  });
  if (!policy.ok) throw new Usage(policy.error.message);
  const issuer = await loadIssuer(values, parent);
  if (!issuer.ok) return issuer;
  const dir = values.dir;
  const file = join(dir, printPath(path.value));
  const key = await loadOrCreateKey(`${file}.key`, keyType(values), io);
  if (!key.ok) return key;
  const lifetime = count(values.days, 'days', DEFAULT_DAYS.delegation);
  const issued = await issueDelegation(
    issuer.value,
    label,
    policy.value,
    key.value.publicKey,
    validityFor(new Date(), days(lifetime)),
  );
  if (!issued.ok) return issued;
  await writeCertificates(`${file}.pem`, issued.value.chain, io);
  await record(dir, issued.value.certificate);
  return ok(undefined);
}

async function sign(csrFile: string, values: Values, io: CliIo): Promise<Result<void, PetrelError>> {
  const out = values.out ?? join(dirname(csrFile), `${basename(csrFile, extname(csrFile))}.pem`);
  if (out === csrFile) throw new Usage('the request would be overwritten; give --out');
  const issuer = await loadIssuer(values, null);
  if (!issuer.ok) return issuer;
  const request = await readBytes(csrFile);
  if (!request.ok) return request;
  const options = values.days === undefined ? {} : { days: count(values.days, 'days') };
  const issued: Result<Issued, PetrelError> = await signRequest(issuer.value, request.value, options);
  if (!issued.ok) return issued;
  await writeCertificates(out, issued.value.chain, io);
  await record(values.dir, issued.value.certificate);
  return ok(undefined);
}

const list = (text: string): string[] =>
  text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');

/**
 * The signing CA: --issuer-cert/--issuer-key, else the one for `parent` in --dir. When `parent`
 * is given, the issuer's own chain must spell that path, so `delegate a:b` cannot be signed by
 * the CA of some other path.
 */
async function loadIssuer(values: Values, parent: Path | null): Promise<Result<Issuer, PetrelError>> {
  const base = parent === null || parent.length === 0 ? null : join(values.dir, printPath(parent));
  const certFile = values['issuer-cert'] ?? (base === null ? join(values.dir, 'cacert.pem') : `${base}.pem`);
  const keyFile = values['issuer-key'] ?? (base === null ? join(values.dir, 'ca.key') : `${base}.key`);
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
  if (parent !== null) {
    const delegation = delegationOf(chain.map((c) => viewOf(c)));
    if (!delegation.ok) return delegation;
    if (printPath(delegation.value.path) !== printPath(parent)) {
      const has = `${printPath(delegation.value.path)}:`;
      return err('E_PKI_PATH', `the issuing CA in ${certFile} delegates ${has}, not ${printPath(parent)}:`);
    }
  }
  return ok({ chain, key: key.value });
}

async function sameKey(cert: x509.X509Certificate, key: KeyPair): Promise<boolean> {
  const spki = new Uint8Array(await webcrypto.subtle.exportKey('spki', key.publicKey));
  return Buffer.compare(spki, new Uint8Array(cert.publicKey.rawData)) === 0;
}

async function loadOrCreateKey(
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

async function writeCertificates(
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

async function record(dir: string, cert: x509.X509Certificate): Promise<void> {
  await appendFile(join(dir, 'db'), `${cert.serialNumber} ${viewOf(cert).commonName ?? ''}\n`);
}

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}

async function readBytes(file: string): Promise<Result<Uint8Array, PetrelError>> {
  try {
    return ok(new Uint8Array(await readFile(file)));
  } catch (e) {
    return err('E_PKI_FILE', `cannot read ${file}: ${describeError(e)}`);
  }
}
