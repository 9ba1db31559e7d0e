// Fleet deployment proofs: the registry records a deployment and holds no authority, so a node
// runs one only on a leaf signed by a delegation of its own CA, checked here as a TLS client's
// chain is (chain.ts, identity.ts) and against the registry's row field by field. Pure.
//
// What must stay true:
//   1. A proof verifies only for the row a delegation of the node's CA signed: any byte of the
//      proof changed is refused, and any field of the row changed (the field named).
//   2. A proof's leaf has the deployment purpose alone: no token, TLS client or server leaf
//      passes for one, nor one for them (certs.ts DEPLOYMENT_PURPOSE).
//   3. A proof is valid until its delegation expires (its leaf ends with it) or is denied.
//   4. What it asks is admitted by the chain's policies with the engine's own admission
//      (src/resources admitUnikernel over the configuration's allocation), under its path.

import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import {
  childName,
  isPrefix,
  type Name,
  type Path,
  parseName,
  printName,
  printPath,
} from '../resources/name.js';
import { addBlock, addPolicy, admitUnikernel, emptyTree } from '../resources/tree.js';
import { allocationOf, hostBridge } from '../wire/allocation.js';
import { ALBATROSS_OID, createConfig, decodeCertExtension, encodeCertExtension } from '../wire/index.js';
import type { UnikernelConfig } from '../wire/types.js';
import { viewOf } from './certs.js';
import { type PathCertificate, type TrustAnchor, verifyClientChain } from './chain.js';
import {
  type Difference,
  decodePayload,
  differences,
  encodePayload,
  type Payload,
  PROOF_EXTENSION_OID,
  type ProofRequest,
  type ProofRequirements,
} from './deployment-payload.js';
import { readCertificate } from './der.js';
import type { TlsError, TlsErrorCode } from './errors.js';
import { type ChainPolicy, checkChainPolicies, delegationOf } from './identity.js';
import { type Issuer, issueDelegatedLeaf, selfSigned } from './pki.js';
import { certificateId, revokedOn, splitCertificates } from './token.js';

export { PROOF_EXTENSION_OID, type ProofRequest, type ProofRequirements } from './deployment-payload.js';

/** What a node learns from a proof it verified. */
export interface VerifiedDeployment {
  /** The leaf's certificateId: what `petrel ca revoke` names to withdraw this one proof. */
  readonly id: string;
  readonly name: Name;
  /** The create's configuration (its image empty: the node fetches it by digest). */
  readonly config: UnikernelConfig;
  /** The delegation's path, root first. */
  readonly delegation: Path;
  /** The chain's policies, deepest first: what the node installs before the create. */
  readonly policies: readonly ChainPolicy[];
  /** The proof's expiry, its delegation's. */
  readonly expires: Date;
}

export interface VerifiedRemoval {
  readonly id: string;
  readonly name: Name;
  readonly delegation: Path;
  readonly expires: Date;
}

export interface ProofCheck {
  /** The node's CA (`tlsCa`). */
  readonly ca: TrustAnchor;
  readonly now: Date;
  /** The deny-list: whether a certificateId is revoked. */
  readonly denied: (id: string) => boolean;
}

/**
 * A proof for `request`, signed by `delegation`'s key, valid until the delegation expires: the
 * leaf, then the delegation's chain (without the CA), as one byte string for the registry. The
 * request is checked first as a node would check it, so what is signed can be run.
 */
export async function issueDeploymentProof(
  request: ProofRequest,
  delegation: Issuer,
  now: Date = new Date(),
): Promise<Result<Uint8Array, PetrelError>> {
  const config = createOf(request.command);
  if (!config.ok) return config;
  const path = issuerPath(delegation);
  if (!path.ok) return path;
  const fits = checkRequest(request, config.value, path.value.path, path.value.policies);
  if (!fits.ok) return fits;
  const payload = encodePayload({ name: request.name, request });
  return signProof(delegation, request.name, request.command, payload, now);
}

/** A proof that `delegation` asks for `name` to be removed (`petrel fleet rm`). */
export async function issueRemovalProof(
  name: string,
  delegation: Issuer,
  now: Date = new Date(),
): Promise<Result<Uint8Array, PetrelError>> {
  const path = issuerPath(delegation);
  if (!path.ok) return path;
  const parsed = nameUnder(name, path.value.path);
  if (!parsed.ok) return parsed;
  const command = encodeCertExtension({ type: 'unikernel-destroy' });
  if (!command.ok) return command;
  return signProof(delegation, name, command.value, encodePayload({ name, request: null }), now);
}

/**
 * Verifies a deployment's proof against the registry's row (`expected`): the chain to the
 * node's CA as a TLS client's (deployment purpose), none of it denied, the row equal to what the
 * leaf signed, the command a create matching the signed requirements, the name under the
 * delegation's path, and the configuration admitted by the chain's policies.
 */
export function verifyDeploymentProof(
  proof: Uint8Array,
  expected: ProofRequest,
  check: ProofCheck,
): Result<VerifiedDeployment, TlsError> {
  const read = readProof(proof, expected.name, check);
  if (!read.ok) return read;
  const { leafCommand, payload, delegation, policies, id, expires } = read.value;
  if (payload.request === null) {
    return err('E_DEPLOY_MALFORMED', `the proof for ${expected.name} is a removal proof, not a deployment's`);
  }
  const signed: ProofRequest = { ...payload.request, name: payload.name, command: leafCommand };
  const altered = differences(expected, signed);
  if (altered.length > 0) {
    const [first] = altered as [Difference, ...Difference[]];
    return err(
      'E_DEPLOY_ALTERED',
      `the registry's row for ${expected.name} is not what its proof signed: ${first.field} is ${first.row}, signed ${first.signed}`,
      { fields: altered.map((d) => d.field) },
    );
  }
  const config = createOf(leafCommand);
  if (!config.ok) return config;
  const fits = checkRequest(signed, config.value, delegation, policies);
  if (!fits.ok) return fits;
  return ok({ id, name: fits.value, config: config.value, delegation, policies, expires });
}

/** Verifies a removal's proof for `name`, as a deployment's (without a configuration to admit). */
export function verifyRemovalProof(
  proof: Uint8Array,
  name: string,
  check: ProofCheck,
): Result<VerifiedRemoval, TlsError> {
  const read = readProof(proof, name, check);
  if (!read.ok) return read;
  const { payload, delegation, id, expires } = read.value;
  if (payload.request !== null) {
    return err('E_DEPLOY_MALFORMED', `the proof for removing ${name} is a deployment's, not a removal proof`);
  }
  if (payload.name !== name) {
    return err('E_DEPLOY_ALTERED', `the proof removes ${payload.name}, not ${name}`, { fields: ['name'] });
  }
  const parsed = nameUnder(name, delegation);
  if (!parsed.ok) return parsed;
  return ok({ id, name: parsed.value, delegation, expires });
}

// ---------------------------------------------------------------------------------------------

interface ReadProof {
  readonly leafCommand: Uint8Array;
  readonly payload: Payload;
  readonly delegation: Path;
  readonly policies: readonly ChainPolicy[];
  readonly id: string;
  readonly expires: Date;
}

/** Chain, deny-list, delegation, then the leaf's two extensions; `what` names it in messages. */
/**
 * The most bytes a proof may have: a handful of certificates and a create command without its
 * image take a few KiB, so whoever can write the registry cannot make a node parse megabytes.
 */
export const MAX_PROOF_BYTES = 64 * 1024;

function readProof(proof: Uint8Array, what: string, check: ProofCheck): Result<ReadProof, TlsError> {
  if (proof.length > MAX_PROOF_BYTES)
    return err(
      'E_DEPLOY_MALFORMED',
      `the proof for ${what} is ${proof.length} bytes, more than ${MAX_PROOF_BYTES}`,
    );
  const ders = splitCertificates(proof, `the proof for ${what}`, 'E_DEPLOY_MALFORMED');
  if (!ders.ok) return ders;
  const path = verifyClientChain(ders.value, check.ca, check.now, 'deployment');
  if (!path.ok) return chainRefusal(path.error, what);
  const denied = revokedOn(path.value, check.denied);
  if (denied !== null) {
    const { cert, id } = denied;
    const whose = cert === path.value[0] ? 'its proof' : `its delegation ${cert.subject}`;
    return err('E_DEPLOY_REVOKED', `the deployment ${what}: ${whose} is revoked (id ${id})`, { id });
  }
  const leaf = path.value[0] as PathCertificate;
  const issuers = path.value.slice(1);
  const chain = delegationOf(issuers);
  const fits = chain.ok ? checkChainPolicies(chain.value.policies) : chain;
  if (!chain.ok || !fits.ok) {
    const e = (chain.ok ? fits : chain) as { error: TlsError };
    return err('E_DEPLOY_POLICY', `the deployment ${what}: its delegation chain: ${e.error.message}`, {
      chain: e.error.code,
    });
  }
  const extensions = readCertificate(leaf.der).extensions;
  const command = extensions.find((e) => e.oid === ALBATROSS_OID);
  const carried = extensions.find((e) => e.oid === PROOF_EXTENSION_OID);
  if (command === undefined || carried === undefined) {
    const missing = command === undefined ? 'command (Albatross extension)' : 'request (Petrel extension)';
    return err('E_DEPLOY_MALFORMED', `the proof for ${what} carries no ${missing}`);
  }
  const payload = decodePayload(carried.value);
  if (!payload.ok) {
    return err(
      'E_DEPLOY_MALFORMED',
      `the proof for ${what}: its request does not decode: ${payload.error.message}`,
    );
  }
  return ok({
    leafCommand: command.value,
    payload: payload.value,
    delegation: chain.value.path,
    policies: chain.value.policies,
    id: certificateId(leaf.der),
    expires: leaf.notAfter,
  });
}

/** What a chain verification failure means for a proof; the chain's own message follows. */
function chainRefusal(error: TlsError, what: string): Result<never, TlsError> {
  const code: TlsErrorCode =
    error.code === 'E_TLS_EXPIRED' || error.code === 'E_TLS_NOT_YET_VALID'
      ? 'E_DEPLOY_EXPIRED'
      : error.code === 'E_TLS_UNTRUSTED'
        ? 'E_DEPLOY_FOREIGN_CA'
        : error.code === 'E_TLS_CERT_INVALID' || error.code === 'E_TLS_CHAIN_TOO_LONG'
          ? 'E_DEPLOY_MALFORMED'
          : 'E_DEPLOY_FORGED';
  const why: Record<string, string> = {
    E_DEPLOY_EXPIRED: 'its proof, which ends with its delegation, is out of date',
    E_DEPLOY_FOREIGN_CA: "its proof is not signed under this node's CA",
    E_DEPLOY_MALFORMED: 'its proof does not read',
    E_DEPLOY_FORGED: 'its proof does not verify',
  };
  return err(code, `the deployment ${what}: ${why[code]}: ${error.message}`, {
    ...error.details,
    chain: error.code,
  });
}

/** The delegation's path and policies, as a node will read them from the proof's chain. */
function issuerPath(
  delegation: Issuer,
): Result<{ path: Path; policies: readonly ChainPolicy[] }, PetrelError> {
  const views = delegation.chain.filter((c) => !selfSigned(c)).map((c) => viewOf(c));
  if (views.length === 0) {
    return err('E_PKI_NAME', 'a proof is signed by a delegation, not by the CA itself');
  }
  const read = delegationOf(views);
  return read.ok ? ok({ path: read.value.path, policies: read.value.policies }) : read;
}

async function signProof(
  delegation: Issuer,
  name: string,
  command: Uint8Array,
  payload: Uint8Array,
  now: Date,
): Promise<Result<Uint8Array, PetrelError>> {
  const head = delegation.chain[0];
  if (head === undefined) return err('E_PKI_NAME', 'the delegation has no certificate');
  const issued = await issueDelegatedLeaf(delegation, {
    profile: 'deployment',
    what: 'deployment proof',
    commonName: name,
    expires: head.notAfter,
    now,
    extensions: [
      { oid: ALBATROSS_OID, critical: false, value: command },
      { oid: PROOF_EXTENSION_OID, critical: false, value: payload },
    ],
  });
  if (!issued.ok) return issued;
  const above = issued.value.above.map((c) => new Uint8Array(c.rawData));
  return ok(new Uint8Array(Buffer.concat([issued.value.der, ...above])));
}

/** The create a command extension's value holds, its image empty. */
function createOf(command: Uint8Array): Result<UnikernelConfig, TlsError> {
  const decoded = decodeCertExtension(command);
  if (!decoded.ok) return err('E_DEPLOY_MALFORMED', `the command does not decode: ${decoded.error.message}`);
  if (decoded.value.type !== 'unikernel-create') {
    return err('E_DEPLOY_MALFORMED', `the command is ${decoded.value.type}, not unikernel-create`);
  }
  const config = createConfig(decoded.value);
  if (config.image.length > 0) {
    return err('E_DEPLOY_MALFORMED', 'the command carries an image: a deployment names it by its digest');
  }
  return ok(config);
}

/** Fields a well-formed request has, whatever signed it. */
function checkShape(request: ProofRequest): Result<void, TlsError> {
  const count = (n: number) => Number.isSafeInteger(n) && n >= 0;
  const bad = (field: string, why: string) =>
    err('E_DEPLOY_MALFORMED', `the deployment ${request.name}: ${field} ${why}`, { field });
  if (!count(request.replicas) || request.replicas < 1) return bad('replicas', 'must be a whole number ≥ 1');
  if (!/^[0-9a-f]{64}$/.test(request.image.sha256))
    return bad('image.sha256', 'must be 64 lower-case hex digits');
  if (!count(request.image.size)) return bad('image.size', 'must be a whole number');
  if (!count(request.blockDevices)) return bad('blockDevices', 'must be a whole number');
  if (request.node === '') return bad('node', 'must be a node id or null');
  return ok(undefined);
}

/**
 * The request's name under `delegation`, its command matching its requirements and block
 * devices, and the configuration admitted by the chain's policies. Returns the parsed name.
 */
function checkRequest(
  request: ProofRequest,
  config: UnikernelConfig,
  delegation: Path,
  policies: readonly ChainPolicy[],
): Result<Name, TlsError> {
  const shape = checkShape(request);
  if (!shape.ok) return shape;
  const name = nameUnder(request.name, delegation);
  if (!name.ok) return name;
  const derived: Omit<ProofRequirements, 'runtime' | 'abi'> = {
    bridges: config.bridges.map(hostBridge),
    memoryMiB: config.memory,
    cpus: config.cpus,
  };
  const mismatched = differences(
    { ...request, requirements: { ...request.requirements, ...derived }, blockDevices: config.blocks.length },
    request,
  );
  if (mismatched.length > 0) {
    const [first] = mismatched as [Difference, ...Difference[]];
    return err(
      'E_DEPLOY_MALFORMED',
      `the deployment ${request.name}: its command gives ${first.field} ${first.row}, its request ${first.signed}`,
      { fields: mismatched.map((d) => d.field) },
    );
  }
  const admitted = admit(name.value, config, policies);
  return admitted.ok ? ok(name.value) : admitted;
}

/** A unikernel's name at the delegation's path or below it. */
function nameUnder(text: string, delegation: Path): Result<Name, TlsError> {
  const name = parseName(text);
  if (!name.ok) return err('E_DEPLOY_MALFORMED', `the deployment's name: ${name.error.message}`);
  if (name.value.label === null) {
    return err('E_DEPLOY_MALFORMED', `the deployment's name ${text} is a path, not a unikernel`);
  }
  if (!isPrefix(delegation, name.value.path)) {
    const own = printPath(delegation);
    return err('E_DEPLOY_POLICY', `the deployment ${text} is outside its delegation's path ${own}`, {
      delegation: own,
    });
  }
  return ok(name.value);
}

/**
 * The engine's admission over a tree of only the chain's policies: memory, CPU ids, bridges,
 * and for each block device, block storage allowed (at its smallest, 1 MiB: its size is checked
 * when the node creates it).
 */
function admit(
  name: Name,
  config: UnikernelConfig,
  policies: readonly ChainPolicy[],
): Result<void, TlsError> {
  const allocation = allocationOf(config);
  if (!allocation.ok)
    return err('E_DEPLOY_MALFORMED', `the deployment ${printName(name)}: ${allocation.error.message}`);
  let tree = emptyTree;
  const refused = (e: PetrelError) =>
    err(
      'E_DEPLOY_POLICY',
      `the deployment ${printName(name)} asks more than its delegation allows: ${e.message}`,
      {
        ...e.details,
        limit: e.code,
      },
    );
  for (const { path, policy } of [...policies].reverse()) {
    const added = addPolicy(tree, path, policy);
    if (!added.ok) return refused(added.error);
    tree = added.value;
  }
  for (const block of allocation.value.blocks) {
    const added = addBlock(tree, childName(name.path, block), 1);
    if (!added.ok) return refused(added.error);
    tree = added.value;
  }
  const admitted = admitUnikernel(tree, name, allocation.value);
  return admitted.ok ? ok(undefined) : refused(admitted.error);
}
