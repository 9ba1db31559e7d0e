// `petrel ca init|delegate|sign`: the root CA with the TLS endpoint's server certificate, the
// delegations (intermediate CAs carrying a policy), and certificate requests signed.

import { mkdir } from 'node:fs/promises';
import { basename, dirname, extname, join } from 'node:path';
import { err, ok, type PetrelError, type Result } from '../../../resources/errors.js';
import { parsePath, printPath } from '../../../resources/name.js';
import { makePolicy } from '../../../resources/policy.js';
import { signRequest } from '../../../tls/csr.js';
import {
  createRootCa,
  DEFAULT_DAYS,
  days,
  type Issued,
  issue,
  issueDelegation,
  validityFor,
} from '../../../tls/pki.js';
import type { x509 } from '../../../tls/x509.js';
import type { CliIo } from '../../command.js';
import { exists, loadIssuer, loadOrCreateKey, readBytes, record, writeCertificates } from './files.js';
import { count, keyType, list, Usage, type Values } from './options.js';

export async function init(values: Values, io: CliIo): Promise<Result<void, PetrelError>> {
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
  const root = await createRootCa(caKey.value, values.name ?? 'ca', validityFor(now, days(lifetime)));
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

export async function delegate(
  pathText: string,
  values: Values,
  io: CliIo,
): Promise<Result<void, PetrelError>> {
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

export async function sign(csrFile: string, values: Values, io: CliIo): Promise<Result<void, PetrelError>> {
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
