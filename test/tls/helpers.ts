// Test PKI: good certificates from src/tls/pki.ts, and `forge` for the bad ones the profiles
// never produce (no CA flag, no keyCertSign, critical or undecodable extensions, odd validity).

import { join } from 'node:path';
import { unwrap } from '../../src/resources/errors.js';
import { type Name, parseName } from '../../src/resources/name.js';
import { makePolicy, type Policy, type PolicyInput } from '../../src/resources/policy.js';
import { type PathCertificate, viewOf } from '../../src/tls/certs.js';
import {
  exportPrivateKey,
  generateKey,
  type KeyPair,
  type KeyType,
  signingAlgorithm,
} from '../../src/tls/keys.js';
import { days, type Issuer, issue, type Validity, validityFor } from '../../src/tls/pki.js';
import { x509 } from '../../src/tls/x509.js';
import { ALBATROSS_OID, encodeCertExtension } from '../../src/wire/index.js';
import type { Command } from '../../src/wire/types.js';

/** `<repo>/../shared/vectors/albatross-2.1`, read in place. */
export const VECTORS = join(import.meta.dirname, '..', '..', '..', 'shared', 'vectors', 'albatross-2.1');

export const name = (text: string): Name => unwrap(parseName(text));
export const policy = (input: Partial<PolicyInput> = {}): Policy =>
  unwrap(makePolicy({ vms: 2, memory: 256, cpuids: [0], block: 100, bridges: ['service'], ...input }));

export const INFO: Command = { type: 'unikernel-info', release: '2.7' };
export const DESTROY: Command = { type: 'unikernel-destroy' };

/** Validity around the real clock: the TLS tests run against it. */
export const current = (lifetimeDays = 1): Validity => validityFor(new Date(), days(lifetimeDays));
export const expired = (): Validity => ({
  notBefore: new Date(Date.now() - days(10)),
  notAfter: new Date(Date.now() - days(1)),
});
export const future = (): Validity => ({
  notBefore: new Date(Date.now() + days(1)),
  notAfter: new Date(Date.now() + days(10)),
});

export async function rootCa(cn = 'ca', keyType: KeyType = 'ed25519'): Promise<Issuer> {
  const key = await generateKey(keyType);
  const { certificate } = await issue({
    profile: 'root',
    commonName: cn,
    publicKey: key.publicKey,
    validity: current(3650),
    signingKey: key,
  });
  return { chain: [certificate], key };
}

/** A server certificate issued by `issuer` (CN server, for a year), and both it and its key as PEM. */
export async function serverIdentity(
  issuer: Issuer,
  lifetimeDays = 365,
): Promise<{ certificate: x509.X509Certificate; cert: string; key: string }> {
  const key = await generateKey('ed25519');
  const { certificate } = await issue({
    profile: 'server',
    commonName: 'server',
    publicKey: key.publicKey,
    validity: current(lifetimeDays),
    issuer,
  });
  return { certificate, cert: certificate.toString('pem'), key: await exportPrivateKey(key) };
}

/** A delegation without the signing checks, so tests can make policies that exceed their parent. */
export async function delegate(
  issuer: Issuer,
  label: string,
  p: Policy = policy(),
  validity: Validity = current(365),
): Promise<Issuer> {
  const key = await generateKey('ed25519');
  const command: Command = { type: 'policy-add', policy: p };
  const { chain } = await issue({
    profile: 'delegation',
    commonName: label,
    publicKey: key.publicKey,
    validity,
    command,
    issuer,
  });
  return { chain, key };
}

export interface Client {
  readonly key: KeyPair;
  /** Leaf first, then the issuer chain (what a client presents). */
  readonly chain: readonly x509.X509Certificate[];
}

export async function leaf(
  issuer: Issuer,
  cn: string | null,
  command: Command = INFO,
  validity: Validity = current(),
): Promise<Client> {
  const key = await generateKey('ed25519');
  const { chain } = await issue({
    profile: 'command',
    commonName: cn,
    publicKey: key.publicKey,
    validity,
    command,
    issuer,
  });
  return { key, chain };
}

export interface ForgeOptions {
  readonly issuer?: Issuer;
  readonly key?: KeyPair;
  readonly cn?: string | null;
  readonly validity?: Validity;
  /** basicConstraints: null leaves it out. Default CA:TRUE. */
  readonly ca?: boolean | null;
  readonly pathLength?: number;
  /** KeyUsageFlags; null leaves the extension out. Default keyCertSign | digitalSignature. */
  readonly keyUsage?: number | null;
  readonly command?: Command;
  /** Raw extnValue content for the Albatross extension (overrides `command`). */
  readonly extensionValue?: Uint8Array;
  readonly critical?: boolean;
  /** Extra extensions, e.g. an unknown critical one. */
  readonly extra?: readonly x509.Extension[];
}

/** Any certificate, self-signed unless an issuer is given; returns it as an Issuer for chaining. */
export async function forge(options: ForgeOptions = {}): Promise<Issuer> {
  const key = options.key ?? (await generateKey('ed25519'));
  const signer = options.issuer?.key ?? key;
  const extensions: x509.Extension[] = [];
  const value =
    options.extensionValue ??
    (options.command === undefined ? undefined : unwrapWire(encodeCertExtension(options.command)));
  if (value !== undefined)
    extensions.push(new x509.Extension(ALBATROSS_OID, options.critical ?? false, value));
  if (options.ca !== null) {
    extensions.push(new x509.BasicConstraintsExtension(options.ca ?? true, options.pathLength, true));
  }
  const usage =
    options.keyUsage === undefined
      ? x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.digitalSignature
      : options.keyUsage;
  if (usage !== null) extensions.push(new x509.KeyUsagesExtension(usage, true));
  extensions.push(...(options.extra ?? []));
  const cn = options.cn === undefined ? 'forged' : options.cn;
  const subject = new x509.Name(cn === null ? [] : [{ CN: [cn] }]);
  const validity = options.validity ?? current(30);
  const cert = await x509.X509CertificateGenerator.create({
    subject,
    issuer: options.issuer?.chain[0]?.subjectName ?? subject,
    notBefore: validity.notBefore,
    notAfter: validity.notAfter,
    extensions,
    publicKey: key.publicKey,
    signingKey: signer.privateKey,
    signingAlgorithm: signingAlgorithm(signer.type),
  });
  const above = (options.issuer?.chain ?? []).filter((c) => c.subject !== c.issuer);
  return { chain: [cert, ...above], key };
}

function unwrapWire<T>(result: { ok: true; value: T } | { ok: false; error: { message: string } }): T {
  if (!result.ok) throw new Error(result.error.message);
  return result.value;
}

export const der = (cert: x509.X509Certificate): Uint8Array => new Uint8Array(cert.rawData);
export const ders = (chain: readonly x509.X509Certificate[]): Uint8Array[] => chain.map(der);

/** A PathCertificate for identity tests, without going through verification. */
export const view = (cert: x509.X509Certificate): PathCertificate => viewOf(cert);
