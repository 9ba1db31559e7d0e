// Deployments: what the fleet is asked to keep running, as the proof, the registry and each
// node's reconciliation share it. The registry holds no authority: a deployment is a request
// signed by a delegation (src/tls/deployment-proof.ts), and a row is worth only what its proof is.
//
// What must stay true:
//   1. A replica (deployment name, index) runs on at most one node once the nodes have reported:
//      its assignment has a generation, and a node holding a lower generation than the
//      registry's destroys its copy before it reports it.
//   2. A deployment's replicas are on distinct nodes.
//   3. A deployment with block devices, or pinned to a node, is never re-placed: when its node is
//      lost it waits for it.
//   4. Nothing runs that no delegation of the node's own CA asked for, within its policy, until
//      that delegation expires or is revoked.

import type { Requirements } from './placement.js';

/** The SHA-256 of an image, lower-case hex: the registry stores each image once under it. */
export type ImageDigest = string;

/**
 * What a delegation signs for a deployment. The unikernel's configuration is the DER of an
 * Albatross create command with an empty image (the image is named by its digest), as a command
 * certificate carries it, so a node decodes it with the wire codec and admits it as a TLS
 * session's create; src/fleet keeps it as bytes (it does not import src/wire).
 */
export interface DeploymentRequest {
  /** The full name the replicas run under: the signer's delegation path and a label (`alice:web`). */
  readonly name: string;
  /** How many copies, each on a node of its own (≥ 1). */
  readonly replicas: number;
  readonly image: { readonly sha256: ImageDigest; readonly size: number };
  /** The create command's DER, its image empty. */
  readonly command: Uint8Array;
  /** What placement needs of it: derived from `command` when signed, checked again by every node. */
  readonly requirements: Requirements;
  /** How many block devices it has: a deployment with any is never re-placed. */
  readonly blockDevices: number;
  /** A node the deployment is pinned to (`--node`), or null for any that qualifies. */
  readonly node: string | null;
}

/** A replica: one copy of a deployment, by its index (0 … replicas − 1). */
export interface ReplicaKey {
  readonly name: string;
  readonly index: number;
}

/**
 * Where a replica stands, as `petrel fleet ls` says it:
 *   placing   assigned to a node that has not reported it running yet;
 *   running   its node reports it;
 *   unplaced  no node qualifies (the reason per node is kept), retried as nodes appear;
 *   waiting   pinned or with block devices, and its node is lost: it waits for that node;
 *   exited    it exited and its configuration does not restart it (its status is kept);
 *   refused   a node found its proof forged, altered or not of its CA (never placed again);
 *   expired   its delegation expired or was revoked (stopped, never placed again).
 */
export type ReplicaState = 'placing' | 'running' | 'unplaced' | 'waiting' | 'exited' | 'refused' | 'expired';

/** The registry's record of a replica. */
export interface Assignment extends ReplicaKey {
  /** The node it is assigned to, or null when unplaced. */
  readonly node: string | null;
  /** Raised at every (re-)placement; a node's copy of a lower generation is stale. */
  readonly generation: number;
  readonly state: ReplicaState;
  /** When it entered this state. */
  readonly since: Date;
  /** Why it is in this state (per node when unplaced), or null. */
  readonly reason: string | null;
}
