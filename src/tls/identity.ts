// A verified certificate path → who the client is (name), what its chain delegates (policies,
// deepest first) and the one command its leaf carries, exactly as semantics §14.2. Pure.

import { err, ok, type Result } from '../resources/errors.js';
import { childName, type Name, type Path, parseLabel, pathName, printPath } from '../resources/name.js';
import { isSubPolicy, type Policy } from '../resources/policy.js';
import { ALBATROSS_OID, decodeCertExtension, findCertExtension } from '../wire/index.js';
import type { Command, CommandType } from '../wire/types.js';
import { MAX_CHAIN } from './chain.js';
import type { RawExtension } from './der.js';
import type { TlsError } from './errors.js';

/** What identity derivation reads from a certificate (chain.ts's PathCertificate has it). */
export interface CertificateView {
  readonly der: Uint8Array;
  /** null: the subject has no CN at all, which is not the same as an empty CN. */
  readonly commonName: string | null;
  /** Its extensions, when already read (a verified path's are): `der` is then not walked again. */
  readonly extensions?: readonly RawExtension[];
}

export interface ChainPolicy {
  readonly path: Path;
  readonly policy: Policy;
}

export interface Identity {
  readonly name: Name;
  /** Deepest first: the order in which the endpoint installs them. */
  readonly policies: readonly ChainPolicy[];
  readonly command: Command;
}

/** Leaf commands that need a CN, with the text Albatross refuses them with when it is absent. */
const NEEDS_NAME: Partial<Record<CommandType, string>> = {
  'policy-add': 'policy add',
  'policy-remove': 'policy remove',
  'block-add': 'block add',
  'block-add-old': 'old block add',
  'block-remove': 'block remove',
  'block-set': 'block set',
  'block-set-old': 'old block set',
  'block-dump': 'block dump',
  'block-dump-old': 'block dump',
};

/**
 * The commands a leaf may carry (§14.2 step 5): console subscribe and list-inactive, stats
 * subscribe, every unikernel command, policy info, every block command. Policy add/remove,
 * console add and stats add/remove/initial are the endpoint's and the daemon's own business.
 */
export function leafCommandAllowed(command: Command): boolean {
  switch (command.type) {
    case 'console-subscribe':
    case 'console-list-inactive':
    case 'stats-subscribe':
    case 'policy-info':
      return true;
    case 'console-add':
    case 'stats-add':
    case 'stats-remove':
    case 'stats-initial':
    case 'policy-add':
    case 'policy-remove':
      return false;
    default:
      return command.type.startsWith('unikernel-') || command.type.startsWith('block-');
  }
}

/** §14.2 steps 1–6 over a verified path, leaf first. */
export function deriveIdentity(chain: readonly CertificateView[]): Result<Identity, TlsError> {
  if (chain.length >= MAX_CHAIN) return err('E_TLS_CHAIN_TOO_LONG', 'certificate chain too long');
  const [leaf, ...issuers] = chain;
  if (leaf === undefined) return err('E_TLS_CHAIN_EMPTY', 'empty chain');
  const delegation = delegationOf(issuers);
  if (!delegation.ok) return delegation;
  const { path, policies } = delegation.value;
  const command = certificateCommand(leaf);
  if (!command.ok) return command;
  if (command.value === null) {
    return err('E_TLS_NO_EXTENSION', 'leaf certificate does not contain an albatross extension');
  }
  const name = leafName(path, leaf.commonName, command.value);
  if (!name.ok) return name;
  if (!leafCommandAllowed(command.value)) {
    return err('E_TLS_COMMAND', 'unexpected command', { command: command.value.type });
  }
  return ok({ name: name.value, policies, command: command.value });
}

export interface Delegation {
  /** The path the issuers' labels spell, root first. */
  readonly path: Path;
  /** Deepest first. */
  readonly policies: readonly ChainPolicy[];
}

/**
 * The path and policies a list of CA certificates delegates (§14.2 steps 2–3), given nearest to
 * the leaf first: each certificate with a `policy add` extension adds its CN as a label.
 */
export function delegationOf(issuers: readonly CertificateView[]): Result<Delegation, TlsError> {
  let path: Path = [];
  const policies: ChainPolicy[] = [];
  for (const cert of [...issuers].reverse()) {
    const command = certificateCommand(cert);
    if (!command.ok) return command;
    if (command.value === null) continue;
    if (command.value.type !== 'policy-add') {
      return err('E_TLS_UNEXPECTED_WIRE', `unexpected wire ${command.value.type}`, {
        command: command.value.type,
      });
    }
    if (cert.commonName === null) {
      return err('E_TLS_EMPTY_NAME', 'policy add may not have an empty name');
    }
    const label = parseLabel(cert.commonName);
    if (!label.ok) return err('E_TLS_NAME', label.error.message, { cn: cert.commonName });
    path = [...path, label.value];
    policies.unshift({ path, policy: command.value.policy });
  }
  return ok({ path, policies });
}

function leafName(path: Path, cn: string | null, command: Command): Result<Name, TlsError> {
  if (cn === null) {
    const what = NEEDS_NAME[command.type];
    if (what !== undefined) return err('E_TLS_EMPTY_NAME', `${what} may not have an empty name`);
    return ok(pathName(path));
  }
  if (cn === '.' || cn === ':') return ok(pathName(path));
  const label = parseLabel(cn);
  if (!label.ok) return err('E_TLS_NAME', label.error.message, { cn });
  return ok(childName(path, label.value));
}

/**
 * Commands already decoded, by certificate: the same intermediate objects come back on every
 * connection of a delegation chain (chain.ts keeps them), and their bytes never change.
 */
const decoded = new WeakMap<CertificateView, Result<Command | null, TlsError>>();

/** The command in a certificate's Albatross extension; null when it has none. */
export function certificateCommand(cert: CertificateView): Result<Command | null, TlsError> {
  let command = decoded.get(cert);
  if (command === undefined) {
    command = decodeCommand(cert);
    decoded.set(cert, command);
  }
  return command;
}

function decodeCommand(cert: CertificateView): Result<Command | null, TlsError> {
  const found =
    cert.extensions === undefined
      ? findCertExtension(cert.der)
      : ok(cert.extensions.find((e) => e.oid === ALBATROSS_OID) ?? null);
  if (!found.ok) return err('E_TLS_EXTENSION', found.error.message);
  if (found.value === null) return ok(null);
  if (found.value.critical) {
    return err('E_TLS_CRITICAL_EXTENSION', 'the albatross extension is marked critical');
  }
  const command = decodeCertExtension(found.value.value);
  if (!command.ok) return err('E_TLS_EXTENSION', command.error.message, { wire: command.error.code });
  return ok(command.value);
}

/**
 * Each chain policy must fit inside the one above it (resources' isSubPolicy), checked before
 * anything reaches the daemon so an over-large delegation installs nothing.
 */
export function checkChainPolicies(policies: readonly ChainPolicy[]): Result<void, TlsError> {
  for (let i = 0; i + 1 < policies.length; i++) {
    const below = policies[i] as ChainPolicy;
    const above = policies[i + 1] as ChainPolicy;
    const fits = isSubPolicy(above.policy, below.policy);
    if (!fits.ok) {
      return err('E_TLS_POLICY', `policy of ${printPath(below.path)}: ${fits.error.message}`, {
        path: printPath(below.path),
        above: printPath(above.path),
        limit: fits.error.code,
      });
    }
  }
  return ok(undefined);
}

/** deriveIdentity, then the static policy check: everything decided before any frame is sent. */
export function authorize(chain: readonly CertificateView[]): Result<Identity, TlsError> {
  const identity = deriveIdentity(chain);
  if (!identity.ok) return identity;
  const fits = checkChainPolicies(identity.value.policies);
  return fits.ok ? identity : fits;
}
