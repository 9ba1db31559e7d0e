// Certificates as Albatross' client makes them (semantics §15): a self-signed root, the server
// certificate, delegations (intermediate CAs carrying a policy) and command leaves, with the same
// profiles, validity rules and signing checks. No files here: the CLI reads and writes them.

import { webcrypto } from 'node:crypto';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import { type Name, nameAsPath, parseLabel, printPath } from '../resources/name.js';
import { isSubPolicy, list, missing, type Policy, usable } from '../resources/policy.js';
import { ALBATROSS_OID, encodeCertExtension } from '../wire/index.js';
import type { Command } from '../wire/types.js';
import { DEPLOYMENT_PURPOSE, TOKEN_PURPOSE, viewOf } from './certs.js';
import { keyIdentifier, readCertificate } from './der.js';
import {
  type AltName,
  authorityKeyIdentifier,
  basicConstraints,
  type Extension,
  encodeCertificate,
  encodeName,
  extendedKeyUsage,
  keyUsage,
  publicKeyInfo,
  subjectAltName,
  subjectKeyIdentifier,
} from './encode.js';
import { certificateCommand } from './identity.js';
import { type CryptoKey, generateKey, type KeyPair, type KeyType } from './keys.js';
import { x509 } from './x509.js';

/** Validity starts this far in the past, for clock skew (§15). */
const SKEW_MS = 10_000;
const DAY_MS = 86_400_000;
/** Lifetime of the leaf a remote command is signed into on the fly. */
export const ON_THE_FLY_MS = 300_000;

export const DEFAULT_DAYS = { ca: 3650, server: 365, delegation: 365, command: 1 } as const;

export type Profile = 'root' | 'server' | 'delegation' | 'command' | 'token' | 'deployment';

/** A CA that signs: its certificate first, then those above it that are not self-signed. */
export interface Issuer {
  readonly chain: readonly x509.X509Certificate[];
  readonly key: KeyPair;
}

export interface Issued {
  /** The certificate's DER. */
  readonly der: Uint8Array;
  /** The certificate parsed (on first use: the remote client needs only the DER). */
  readonly certificate: x509.X509Certificate;
  /** The certificate, then the issuer's chain without self-signed certificates: what a client presents. */
  readonly chain: readonly x509.X509Certificate[];
  /** The issuer's chain without self-signed certificates. */
  readonly above: readonly x509.X509Certificate[];
}

export interface Validity {
  readonly notBefore: Date;
  readonly notAfter: Date;
}

export function validityFor(now: Date, lifetimeMs: number): Validity {
  return { notBefore: new Date(now.getTime() - SKEW_MS), notAfter: new Date(now.getTime() + lifetimeMs) };
}

export const days = (n: number): number => n * DAY_MS;

const CA_USAGE =
  x509.KeyUsageFlags.keyCertSign |
  x509.KeyUsageFlags.cRLSign |
  x509.KeyUsageFlags.digitalSignature |
  x509.KeyUsageFlags.nonRepudiation;
const END_ENTITY_USAGE = x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment;

export interface IssueParams {
  readonly profile: Profile;
  /** The subject CN; null leaves the subject empty (tests use it; Albatross never does). */
  readonly commonName: string | null;
  readonly publicKey: CryptoKey;
  readonly validity: Validity;
  /** The Albatross extension's command (delegation and command profiles). */
  readonly command?: Command;
  /** Names and addresses a server certificate is for (subjectAltName), as browsers require. */
  readonly altNames?: readonly AltName[];
  /** Extensions of its own, after the command's (a deployment proof's payload, as signed). */
  readonly extensions?: readonly Extension[];
  /** Absent for the self-signed root: then `signingKey` signs and the subject is the issuer. */
  readonly issuer?: Issuer;
  readonly signingKey?: KeyPair;
}

/** Signs one certificate with exactly the extensions of its profile; no policy checks here. */
export async function issue(params: IssueParams): Promise<Issued> {
  const signer = params.issuer?.key ?? params.signingKey;
  if (signer === undefined) throw new Error('issue: an issuer or a signing key is required');
  const issuerCert = params.issuer?.chain[0];
  const subject = encodeName(params.commonName);
  const publicKey = publicKeyInfo(params.publicKey);
  const extensions: Extension[] = [];
  if (params.command !== undefined) {
    const value = encodeCertExtension(params.command);
    if (!value.ok) throw new Error(`cannot encode the certificate command: ${value.error.message}`);
    extensions.push({ oid: ALBATROSS_OID, critical: false, value: value.value });
  }
  extensions.push(...(params.extensions ?? []));
  const ca = params.profile === 'root' || params.profile === 'delegation';
  extensions.push({ oid: OID.keyUsage, critical: true, value: keyUsage(ca ? CA_USAGE : END_ENTITY_USAGE) });
  extensions.push({ oid: OID.basicConstraints, critical: true, value: basicConstraints(ca) });
  const purpose = PURPOSES[params.profile];
  if (purpose !== null) {
    extensions.push({ oid: OID.extKeyUsage, critical: true, value: extendedKeyUsage([purpose]) });
  }
  if (params.altNames !== undefined && params.altNames.length > 0) {
    extensions.push({ oid: OID.subjectAltName, critical: false, value: subjectAltName(params.altNames) });
  }
  if (params.profile !== 'root') {
    const own = keyIdentifier(publicKey);
    extensions.push({ oid: OID.subjectKeyId, critical: false, value: subjectKeyIdentifier(own) });
    const authority = signerKeyIdentifier(signer);
    extensions.push({ oid: OID.authorityKeyId, critical: false, value: authorityKeyIdentifier(authority) });
  }
  const der = encodeCertificate(
    {
      serial: serialNumber(),
      issuer: issuerCert === undefined ? subject : issuerName(issuerCert),
      subject,
      notBefore: params.validity.notBefore,
      notAfter: params.validity.notAfter,
      publicKey,
      extensions,
    },
    signer,
  );
  const above = (params.issuer?.chain ?? []).filter((cert) => !selfSigned(cert));
  let parsed: x509.X509Certificate | undefined;
  const issued: Issued = {
    der,
    get certificate() {
      parsed ??= new x509.X509Certificate(der);
      return parsed;
    },
    get chain() {
      return [issued.certificate, ...above];
    },
    above,
  };
  return issued;
}

/** The one extended key usage of each profile's certificates; CAs have none. */
const PURPOSES: Readonly<Record<Profile, string | null>> = {
  root: null,
  delegation: null,
  server: '1.3.6.1.5.5.7.3.1',
  command: '1.3.6.1.5.5.7.3.2',
  token: TOKEN_PURPOSE,
  deployment: DEPLOYMENT_PURPOSE,
};

const OID = {
  keyUsage: '2.5.29.15',
  basicConstraints: '2.5.29.19',
  extKeyUsage: '2.5.29.37',
  subjectKeyId: '2.5.29.14',
  authorityKeyId: '2.5.29.35',
  subjectAltName: '2.5.29.17',
} as const;

/** The issuer's subject exactly as its certificate encodes it. */
function issuerName(cert: x509.X509Certificate): Uint8Array {
  try {
    return readCertificate(new Uint8Array(cert.rawData)).subject;
  } catch {
    // Not strict DER (some other CA's certificate): the library's re-encoding of the same Name.
    return new Uint8Array(cert.subjectName.toArrayBuffer());
  }
}

/** Key identifiers of signing keys, which sign many certificates. */
const signerIds = new WeakMap<KeyPair, Uint8Array>();

function signerKeyIdentifier(signer: KeyPair): Uint8Array {
  let id = signerIds.get(signer);
  if (id === undefined) {
    id = keyIdentifier(publicKeyInfo(signer.publicKey));
    signerIds.set(signer, id);
  }
  return id;
}

/** 16 random bytes, positive and without a leading zero byte, as the serial number. */
function serialNumber(): Uint8Array {
  const bytes = webcrypto.getRandomValues(new Uint8Array(16));
  bytes[0] = ((bytes[0] as number) & 0x7f) | 0x01;
  return bytes;
}

export function selfSigned(cert: x509.X509Certificate): boolean {
  return cert.subject === cert.issuer;
}

export async function createRootCa(key: KeyPair, name: string, validity: Validity): Promise<Issuer> {
  const { certificate } = await issue({
    profile: 'root',
    commonName: name,
    publicKey: key.publicKey,
    validity,
    signingKey: key,
  });
  return { chain: [certificate], key };
}

/** The policy a CA certificate carries, null when it carries none. */
export function policyOf(cert: x509.X509Certificate): Result<Policy | null, PetrelError> {
  const command = certificateCommand(viewOf(cert));
  if (!command.ok) return command;
  if (command.value === null) return ok(null);
  if (command.value.type !== 'policy-add') {
    return err('E_PKI_POLICY', `the CA certificate carries ${command.value.type}, not a policy`);
  }
  return ok(command.value.policy);
}

/** A delegation must be usable and, if the signing CA has a policy, fit inside it (§15). */
export function checkDelegation(issuer: Issuer, policy: Policy): Result<void, PetrelError> {
  const fit = usable(policy);
  if (!fit.ok) return fit;
  const above = policyOf(issuer.chain[0] as x509.X509Certificate);
  if (!above.ok || above.value === null) return above.ok ? ok(undefined) : above;
  return isSubPolicy(above.value, policy);
}

/** A create must fit the signing CA's policy, with Albatross' client-side texts (§15). */
export function checkCommand(issuer: Issuer, command: Command): Result<void, PetrelError> {
  if (command.type !== 'unikernel-create') return ok(undefined);
  // A replace that keeps the old configuration carries create's defaults, which do not count:
  // petreld admits the old configuration against the delegation (Petrel (m)).
  if (command.check?.keepConfig === true) return ok(undefined);
  const above = policyOf(issuer.chain[0] as x509.X509Certificate);
  if (!above.ok || above.value === null) return above.ok ? ok(undefined) : above;
  const policy = above.value;
  const config = command.config;
  const cpuids = 'cpuids' in config ? config.cpuids : [config.cpuid];
  const cpus = missing(cpuids, policy.cpuids);
  if (cpus.length > 0) {
    return err(
      'E_PKI_POLICY',
      `the CPUids ${list(cpus)} requested by the unikernel are not allowed by policy`,
    );
  }
  if (config.memory > policy.memory) {
    return err(
      'E_PKI_POLICY',
      `${config.memory} MB memory assigned to unikernel exceeds policy (${policy.memory}MB)`,
    );
  }
  const bridges = missing(
    config.bridges.map((net) => net.bridge ?? net.netif),
    policy.bridges,
  );
  if (bridges.length > 0) {
    return err(
      'E_PKI_POLICY',
      `Bridge(s) ${list(bridges)} not allowed by policy (available: ${list(policy.bridges)})`,
    );
  }
  return ok(undefined);
}

/**
 * The leaf CN the client uses for a command on `name` (§15.1): policy commands carry the path
 * (`.` for the root), others the label (`.` for the root); names below the root are refused
 * because paths come from the CA chain.
 */
export function leafCommonName(command: Command, name: Name): Result<string, PetrelError> {
  if (command.type.startsWith('policy-')) {
    const path = printPath(nameAsPath(name));
    return ok(path === '' ? '.' : path);
  }
  if (name.path.length > 0) return err('E_PKI_NAME', 'non-empty path');
  return ok(name.label ?? '.');
}

export interface CommandLeaf extends Issued {
  readonly key: KeyPair;
}

/**
 * The remote client's leaf: the command in the extension, valid from 10 s ago for 300 s, signed
 * by the delegated CA after the same checks the CSR signer applies. Its key is fresh unless
 * `key` is given (a client may use one key for all the leaves of one session).
 */
export async function issueCommandLeaf(
  issuer: Issuer,
  command: Command,
  name: Name,
  options: { readonly keyType?: KeyType; readonly key?: KeyPair; readonly now?: Date } = {},
): Promise<Result<CommandLeaf, PetrelError>> {
  const cn = leafCommonName(command, name);
  if (!cn.ok) return cn;
  const fits = checkCommand(issuer, command);
  if (!fits.ok) return fits;
  const key = options.key ?? (await generateKey(options.keyType ?? 'ed25519'));
  const issued = await issue({
    profile: 'command',
    commonName: cn.value,
    publicKey: key.publicKey,
    validity: validityFor(options.now ?? new Date(), ON_THE_FLY_MS),
    command,
    issuer,
  });
  return ok(Object.assign(issued, { key }));
}

/** A delegation: checked, then signed into an intermediate CA certificate for `label`. */
export async function issueDelegation(
  issuer: Issuer,
  label: string,
  policy: Policy,
  publicKey: CryptoKey,
  validity: Validity,
): Promise<Result<Issued, PetrelError>> {
  const fits = checkDelegation(issuer, policy);
  if (!fits.ok) return fits;
  const command: Command = { type: 'policy-add', policy };
  return ok(await issue({ profile: 'delegation', commonName: label, publicKey, validity, command, issuer }));
}

/**
 * A web API bearer token's leaf (token.ts): CN the token's name, valid from 10 s ago until
 * `expires`, the token purpose as its only extended key usage, signed by the delegation's key.
 */
export async function issueToken(
  issuer: Issuer,
  name: string,
  expires: Date,
  now: Date = new Date(),
): Promise<Result<Issued, PetrelError>> {
  const label = parseLabel(name);
  if (!label.ok) return err('E_PKI_NAME', `the token name: ${label.error.message}`);
  return issueDelegatedLeaf(issuer, { profile: 'token', what: 'token', commonName: name, expires, now });
}

/** What a leaf signed by a delegation's key for one purpose (token, deployment proof) holds. */
export interface DelegatedLeaf {
  readonly profile: 'token' | 'deployment';
  /** What the leaf is called in messages (`token`, `deployment proof`). */
  readonly what: string;
  readonly commonName: string;
  readonly expires: Date;
  readonly now: Date;
  /** Its payload, as signed (a deployment proof's command and request). */
  readonly extensions?: readonly Extension[];
}

/**
 * A leaf valid from 10 s ago until `expires`, never beyond its delegation's own expiry, with its
 * profile's purpose as its only extended key usage, signed by the delegation's key. Its own key
 * pair is fresh and thrown away: such a leaf is used by showing it, never by proving a key, and
 * no one can sign with a key that no longer exists.
 */
export async function issueDelegatedLeaf(
  issuer: Issuer,
  leaf: DelegatedLeaf,
): Promise<Result<Issued, PetrelError>> {
  const { expires, now, what } = leaf;
  if (expires.getTime() <= now.getTime()) return err('E_PKI_VALIDITY', `the ${what} would expire at once`);
  const head = issuer.chain[0] as x509.X509Certificate;
  if (expires > head.notAfter) {
    const until = head.notAfter.toISOString();
    return err('E_PKI_VALIDITY', `the ${what} would outlive its delegation, valid until ${until}`);
  }
  const key = await generateKey('ed25519');
  const validity = { notBefore: new Date(now.getTime() - SKEW_MS), notAfter: expires };
  return ok(
    await issue({
      profile: leaf.profile,
      commonName: leaf.commonName,
      publicKey: key.publicKey,
      validity,
      issuer,
      ...(leaf.extensions === undefined ? {} : { extensions: leaf.extensions }),
    }),
  );
}

/**
 * A name or address given on the command line as a subjectAltName entry: an IPv4 or IPv6
 * address (4 or 16 bytes), else a DNS name (letters, digits, hyphens, dots; `*.` in front).
 */
export function parseAltName(text: string): Result<AltName, PetrelError> {
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (v4 !== null) {
    const bytes = v4.slice(1).map(Number);
    if (bytes.some((b) => b > 255)) return err('E_PKI_NAME', `${text} is not an IPv4 address`);
    return ok({ ip: Uint8Array.from(bytes) });
  }
  if (text.includes(':')) {
    const ip = ipv6Bytes(text);
    return ip === null ? err('E_PKI_NAME', `${text} is not an IPv6 address`) : ok({ ip });
  }
  const label = /^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$/;
  const labels = text.startsWith('*.') ? text.slice(2).split('.') : text.split('.');
  if (text.length > 253 || !labels.every((l) => label.test(l))) {
    return err('E_PKI_NAME', `${text} is neither a DNS name nor an IP address`);
  }
  return ok({ dns: text.toLowerCase() });
}

function ipv6Bytes(text: string): Uint8Array | null {
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const groups = (part: string): string[] => (part === '' ? [] : part.split(':'));
  const head = groups(halves[0] as string);
  const tail = halves.length === 2 ? groups(halves[1] as string) : [];
  const missing = 8 - head.length - tail.length;
  if ((halves.length === 1 && missing !== 0) || (halves.length === 2 && missing < 1)) return null;
  const all = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...tail];
  if (!all.every((g) => /^[0-9a-fA-F]{1,4}$/.test(g))) return null;
  const bytes = new Uint8Array(16);
  all.forEach((g, i) => {
    const n = Number.parseInt(g, 16);
    bytes[i * 2] = n >> 8;
    bytes[i * 2 + 1] = n & 0xff;
  });
  return bytes;
}
