// `petrel ca web-cert`: the certificate petreld's web API shows browsers, signed by the root CA
// for every DNS name and address given, with a key type browsers accept.

import { join } from 'node:path';
import { err, ok, type PetrelError, type Result } from '../../../resources/errors.js';
import type { KeyType } from '../../../tls/keys.js';
import { DEFAULT_DAYS, days, issue, parseAltName, validityFor } from '../../../tls/pki.js';
import type { CliIo } from '../../command.js';
import { loadIssuer, loadOrCreateKey, record, writeCertificates } from './files.js';
import { count, keyType, Usage, type Values } from './options.js';

/** Key types browsers accept for a server certificate. */
const WEB_KEY_TYPES: readonly KeyType[] = ['p256', 'p384', 'rsa2048', 'rsa4096'];

export async function webCert(
  names: readonly string[],
  values: Values,
  io: CliIo,
): Promise<Result<void, PetrelError>> {
  const altNames = names.map((n) => {
    const parsed = parseAltName(n);
    if (!parsed.ok) throw new Usage(parsed.error.message);
    return parsed.value;
  });
  const type = keyType(values, 'p256');
  if (!WEB_KEY_TYPES.includes(type)) {
    throw new Usage(`--key-type ${type}: browsers refuse it for a server; use ${WEB_KEY_TYPES.join(', ')}`);
  }
  const issuer = await loadIssuer(values, null);
  if (!issuer.ok) return issuer;
  const dir = values.dir;
  const key = await loadOrCreateKey(join(dir, 'web.key'), type, io);
  if (!key.ok) return key;
  if (!WEB_KEY_TYPES.includes(key.value.type)) {
    return err('E_PKI_KEY', `${join(dir, 'web.key')} is an ${key.value.type} key, which browsers refuse`);
  }
  const server = await issue({
    profile: 'server',
    commonName: names[0] as string,
    publicKey: key.value.publicKey,
    validity: validityFor(new Date(), days(count(values.days, 'days', DEFAULT_DAYS.server))),
    altNames,
    issuer: issuer.value,
  });
  await writeCertificates(join(dir, 'web.pem'), server.chain, io);
  await record(dir, server.certificate);
  return ok(undefined);
}
