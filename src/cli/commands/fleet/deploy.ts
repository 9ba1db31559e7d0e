// `petrel fleet deploy` and `petrel fleet rm`: a request the fleet keeps, signed by the caller's
// delegation and recorded in the registry. Everything is checked, and the proof signed, before
// the registry is written: a refusal writes nothing. Nodes do not act on deployments yet.

import { createHash } from 'node:crypto';
import type pg from 'pg';
import type { DeploymentRequest } from '../../../fleet/deployment.js';
import { recordDeployment, removeDeployment, storeImage } from '../../../fleet/deployments.js';
import { describeRequirements } from '../../../fleet/placement.js';
import { err } from '../../../resources/errors.js';
import { type Path, printPath } from '../../../resources/name.js';
import { viewOf } from '../../../tls/certs.js';
import { loadTrustAnchor, type TrustAnchor } from '../../../tls/chain.js';
import {
  issueDeploymentProof,
  issueRemovalProof,
  type ProofCheck,
  verifyDeploymentProof,
  verifyRemovalProof,
} from '../../../tls/deployment-proof.js';
import { delegationOf } from '../../../tls/identity.js';
import type { Issuer } from '../../../tls/pki.js';
import { certificateId, splitCertificates } from '../../../tls/token.js';
import type { x509 } from '../../../tls/x509.js';
import { hostBridge } from '../../../wire/allocation.js';
import { encodeCertExtension } from '../../../wire/index.js';
import { fleetCreate, nameUnder } from '../../client/remote-create.js';
import { type CliIo, EXIT } from '../../command.js';
import { readIssuer } from '../ca/files.js';
import { failure, readWorkload, usageError, type Values } from './common.js';

/** More replicas than this is a typing slip, not a fleet: each needs a node of its own. */
export const MAX_REPLICAS = 1000;

export const DEPLOY_HELP = `usage: petrel fleet deploy NAME IMAGE --db URL --tls-cert FILE --tls-key FILE
                           [--replicas N] [CREATE OPTIONS] [--arg ARG]... [--tls-ca FILE] [--json]

Records in the registry a deployment the fleet keeps running: N replicas of IMAGE, each on a node
of its own. The request is signed by your delegation (a deployment proof, docs/fleet.md), so a
node runs it only if a delegation of its own CA asked for it, within that delegation's policy.
NAME is under your delegation's path: a bare label (web) becomes alice:web with alice's.
IMAGE is stored in the registry once, however many deployments run it; the proof names it by its
SHA-256. Recording the same NAME again replaces the deployment (its replicas keep their nodes).

  --replicas N       copies, each on a distinct node (default 1, at most ${MAX_REPLICAS})
  --mem MIB          memory (default 32)
  --cpus N           vCPUs (default 1)
  --net [NETIF:]BRIDGE[@MAC]   a network on BRIDGE (repeatable)
  --arg ARG          a boot argument, in order (repeatable)
  --node ID          pin every replica to this node: it waits for it, never moves
  --tls-cert, --tls-key   your delegation (petrel ca delegate) and its key: they sign
  --tls-ca FILE      the fleet's CA: the proof is verified as a node will, before it is recorded
  --json             what was recorded, as JSON

The runtime and ABI version come from IMAGE's solo5 ABI note. Nothing is written when IMAGE is
not a solo5 ELF, NAME is outside your delegation, its policy refuses the configuration (memory,
CPUs, bridges), or the registry cannot be reached.
Nodes do not act on deployments yet: the replicas stay unplaced until a later version places them.

examples:
  petrel fleet deploy web unikernel.hvt --db postgres://registry/petrel \\
    --tls-cert alice.pem --tls-key alice.key --replicas 3 --mem 64 --net service
  petrel fleet deploy alice:db db.spt --db postgres://registry/petrel \\
    --tls-cert alice.pem --tls-key alice.key --node gw-04 --arg=--ipv4=10.0.0.9/24

Exit status: 0 when recorded, 1 when refused or the registry fails, 2 on a usage error.
`;

export const RM_HELP = `usage: petrel fleet rm NAME --db URL --tls-cert FILE --tls-key FILE [--tls-ca FILE] [--json]

Records, signed by your delegation (a removal proof), that the deployment NAME is to be removed.
Its replicas stay listed until each node has destroyed its copy; then they are retired.
NAME is under your delegation's path, as for deploy; a delegation above it may remove it too.
A NAME that was never deployed is an error; one removed already is left as it is.
  --tls-ca FILE      the fleet's CA: the proof is verified as a node will, before it is recorded
Nodes do not act on deployments yet: the removal is recorded for when they do.

examples:
  petrel fleet rm web --db postgres://registry/petrel --tls-cert alice.pem --tls-key alice.key

Exit status: 0 when recorded (or removed already), 1 when refused, not deployed or the registry
fails, 2 on a usage error.
`;

interface Delegation {
  readonly issuer: Issuer;
  /** Its path, root first: where a bare NAME goes. */
  readonly path: Path;
  /** --tls-ca: a proof is verified against it, as a node of that CA will, before it is recorded. */
  readonly anchor: TrustAnchor | null;
}

/** --tls-cert/--tls-key (and --tls-ca), or the exit status of why not. */
async function readDelegation(io: CliIo, values: Values, action: string): Promise<Delegation | number> {
  const cert = values['tls-cert'];
  const key = values['tls-key'];
  if (cert === undefined || key === undefined) {
    return usageError(io, `${action} needs --tls-cert and --tls-key (a delegation from petrel ca delegate)`);
  }
  const issuer = await readIssuer(cert, key);
  if (!issuer.ok) return failure(io, issuer.error);
  const delegation = delegationOf(issuer.value.chain.map((c) => viewOf(c)));
  if (!delegation.ok) return failure(io, delegation.error);
  const caFile = values['tls-ca'];
  if (caFile === undefined) return { issuer: issuer.value, path: delegation.value.path, anchor: null };
  let bytes: Uint8Array;
  try {
    bytes = await io.readFile(caFile);
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    return failure(io, err('E_PKI_FILE', `cannot read --tls-ca ${caFile}: ${why}`).error);
  }
  const anchor = loadTrustAnchor(bytes);
  if (!anchor.ok) return failure(io, anchor.error);
  return { issuer: issuer.value, path: delegation.value.path, anchor: anchor.value };
}

/** How a node of --tls-ca would check now (its deny-list aside: that is the node's to read). */
const asNode = (anchor: TrustAnchor): ProofCheck => ({ ca: anchor, now: new Date(), denied: () => false });

/** The proof's leaf id (what `petrel ca revoke` names) and its expiry, its delegation's. */
function describeProof(proof: Uint8Array, delegation: Delegation): { id: string; expires: string } {
  const leaf = splitCertificates(proof, 'the proof', 'E_DEPLOY_MALFORMED');
  const id = leaf.ok && leaf.value[0] !== undefined ? certificateId(leaf.value[0]) : '?';
  return { id, expires: (delegation.issuer.chain[0] as x509.X509Certificate).notAfter.toISOString() };
}

function readReplicas(io: CliIo, text: string | undefined): number | { exit: number } {
  if (text === undefined) return 1;
  const n = /^\d{1,9}$/u.test(text) ? Number(text) : Number.NaN;
  if (!(n >= 1 && n <= MAX_REPLICAS)) {
    return {
      exit: usageError(io, `--replicas must be a whole number from 1 to ${MAX_REPLICAS}, not ${text}`),
    };
  }
  return n;
}

export async function runDeploy(
  io: CliIo,
  pool: pg.Pool,
  rest: readonly string[],
  values: Values,
): Promise<number> {
  const replicas = readReplicas(io, values.replicas);
  if (typeof replicas !== 'number') return replicas.exit;
  const workload = await readWorkload(io, rest, values);
  if (typeof workload === 'number') return workload;
  const delegation = await readDelegation(io, values, 'deploy');
  if (typeof delegation === 'number') return delegation;
  const name = nameUnder(workload.name, delegation.path);
  if (!name.ok) return failure(io, name.error);
  const { requirements, nets, image } = workload;
  const command = encodeCertExtension(
    fleetCreate(new Uint8Array(), { ...requirements, nets, args: values.arg ?? [] }),
  );
  if (!command.ok) return failure(io, command.error);
  const request: DeploymentRequest = {
    name: name.value,
    replicas,
    image: { sha256: createHash('sha256').update(image).digest('hex'), size: image.length },
    command: command.value,
    // In the command's order, as the proof checks them (placement's own form is sorted, deduplicated).
    requirements: { ...requirements, bridges: nets.map(hostBridge) },
    blockDevices: 0,
    node: values.node ?? null,
  };
  const proof = await issueDeploymentProof(request, delegation.issuer);
  if (!proof.ok) return failure(io, proof.error);
  if (delegation.anchor !== null) {
    const verified = verifyDeploymentProof(proof.value, request, asNode(delegation.anchor));
    if (!verified.ok) return failure(io, verified.error);
  }
  const stored = await storeImage(pool, request.image.sha256, image);
  if (!stored.ok) return failure(io, stored.error);
  const recorded = await recordDeployment(pool, request, proof.value);
  if (!recorded.ok) return failure(io, recorded.error);
  const signed = { by: `${printPath(delegation.path)}:`, ...describeProof(proof.value, delegation) };
  if (values.json === true) {
    const { command: _, ...shown } = request;
    const document = { ...shown, image: { ...request.image, storedNow: stored.value }, proof: signed };
    io.stdout(`${JSON.stringify(document, null, 2)}\n`);
    return EXIT.OK;
  }
  const copies = `${replicas} replica${replicas === 1 ? '' : 's'}`;
  io.stdout(
    `deployed ${name.value}: ${copies}, ${describeRequirements(request.requirements)}` +
      `${request.node === null ? '' : `, pinned to node ${request.node}`}\n` +
      `image ${request.image.sha256} (${image.length} bytes, ${stored.value ? 'stored now' : 'stored already'})\n` +
      `proof ${signed.id} signed by ${signed.by}, valid until ${signed.expires}\n` +
      "the fleet's nodes will place its replicas (they do not act on deployments yet); petrel fleet ls shows them\n",
  );
  return EXIT.OK;
}

export async function runRemove(
  io: CliIo,
  pool: pg.Pool,
  rest: readonly string[],
  values: Values,
): Promise<number> {
  const [text, ...extra] = rest;
  if (text === undefined) return usageError(io, 'rm needs NAME');
  if (extra.length > 0) return usageError(io, `unexpected argument '${extra[0]}'`);
  const delegation = await readDelegation(io, values, 'rm');
  if (typeof delegation === 'number') return delegation;
  const name = nameUnder(text, delegation.path);
  if (!name.ok) return failure(io, name.error);
  const proof = await issueRemovalProof(name.value, delegation.issuer);
  if (!proof.ok) return failure(io, proof.error);
  if (delegation.anchor !== null) {
    const verified = verifyRemovalProof(proof.value, name.value, asNode(delegation.anchor));
    if (!verified.ok) return failure(io, verified.error);
  }
  const removed = await removeDeployment(pool, name.value, proof.value);
  if (!removed.ok) return failure(io, removed.error);
  const signed = { by: `${printPath(delegation.path)}:`, ...describeProof(proof.value, delegation) };
  if (values.json === true) {
    io.stdout(`${JSON.stringify({ name: name.value, removedNow: removed.value, proof: signed }, null, 2)}\n`);
  } else if (removed.value) {
    io.stdout(
      `removed ${name.value}: proof ${signed.id} signed by ${signed.by}\n` +
        'each node will destroy its copy, then its replicas are retired (nodes do not act on deployments yet)\n',
    );
  } else {
    io.stdout(`${name.value} was removed already: the first removal stands, nothing changed\n`);
  }
  return EXIT.OK;
}
