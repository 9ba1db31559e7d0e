// The fleet's reconciliation, pure: from the deployments, their assignments, the node rows and
// the reservations at one instant, the actions that keep what was asked (planFleet), and what a
// node that comes back must destroy before it reports (staleCopies). The registry applies them.
//
// What must stay true (deployment.ts's invariants, for one round):
//   1. A replica whose node is fresh keeps it; one whose node is lost (not seen for `lostAfter`)
//      is placed again with a higher generation, unless it has block devices or is pinned: then it
//      waits for that node. Waiting, exited, refused and expired replicas are left where they are.
//   2. Every placement is placement.ts's, with `lostAfter` as its freshness window, so a replica
//      is never placed on a lost node; a failed one is `unplaced` with the reason per node.
//   3. Placements of one round count against each other's room, as reservations do, and never
//      put two replicas of one deployment on one node.
//   4. The same input gives the same actions: deployments by name, replicas by index.

import type { Assignment, DeploymentRequest, ReplicaKey } from './deployment.js';
import { compareIds, isFresh, NOTHING_RESERVED, type NodeRow, place, type Reserved } from './placement.js';

/** A stored deployment and what the caller found its proof to be. */
export interface StoredDeployment {
  readonly request: DeploymentRequest;
  /** `expired`: its delegation expired or was revoked; its replicas are never placed again. */
  readonly proof: 'valid' | 'expired';
}

export interface FleetInput {
  readonly deployments: readonly StoredDeployment[];
  readonly assignments: readonly Assignment[];
  readonly nodes: readonly NodeRow[];
  /** What placements hold on each node beyond its last report; a row's own `reserved` is replaced. */
  readonly reservations: ReadonlyMap<string, Reserved>;
  /** The clock: the database's `now()` when the rows came from the registry. */
  readonly now: Date;
  /** A node not seen for longer is lost (and, to placement, stale). */
  readonly lostAfter: number;
}

/** Why a replica waits for its lost node instead of moving. */
export type WaitWhy = 'block devices' | 'pinned';

/**
 * What the registry does with one replica:
 *   place     assign it to `node` at `generation` (new, unplaced before, or its node lost);
 *   unplaced  no node qualifies: clear its node, keep the reasons (node id → why not);
 *   wait      its node `node` is lost and it may not move;
 *   retire    remove it: its deployment is gone or its index is beyond `replicas`;
 *   expire    its deployment's proof expired: stop it, never place it again.
 */
export type FleetAction =
  | {
      readonly kind: 'place';
      readonly replica: ReplicaKey;
      readonly node: string;
      readonly generation: number;
    }
  | {
      readonly kind: 'unplaced';
      readonly replica: ReplicaKey;
      readonly reasons: Readonly<Record<string, readonly string[]>>;
    }
  | { readonly kind: 'wait'; readonly replica: ReplicaKey; readonly node: string; readonly why: WaitWhy }
  | { readonly kind: 'retire'; readonly replica: ReplicaKey }
  | { readonly kind: 'expire'; readonly replica: ReplicaKey };

/** A replica's copy as a node runs it. */
export interface RunningCopy extends ReplicaKey {
  readonly generation: number;
}

const key = (r: ReplicaKey): string => `${r.index}@${r.name}`;

/** States the fleet never moves a replica out of (refused and expired are final). */
const LEFT_ALONE: ReadonlySet<Assignment['state']> = new Set(['exited', 'refused', 'expired']);

/** The actions of one round, deployments by name and replicas by index, then the retirements. */
export function planFleet(input: FleetInput): FleetAction[] {
  const { now, lostAfter } = input;
  const assigned = new Map(input.assignments.map((a) => [key(a), a]));
  const deployments = new Map(input.deployments.map((d) => [d.request.name, d]));
  const fresh = new Set(input.nodes.filter((n) => isFresh(n, now, lostAfter)).map((n) => n.id));
  const held = new Map(input.nodes.map((n) => [n.id, input.reservations.get(n.id) ?? NOTHING_RESERVED]));
  const rows = (): NodeRow[] =>
    input.nodes.map((n) => ({ ...n, reserved: held.get(n.id) ?? NOTHING_RESERVED }));
  const retired = (a: ReplicaKey) => {
    const d = deployments.get(a.name);
    return d === undefined || a.index >= d.request.replicas;
  };
  /** Deployment name → node → the replica index it holds there. */
  const holders = new Map<string, Map<string, number>>();
  for (const a of input.assignments) {
    if (a.node === null || retired(a)) continue;
    const of = holders.get(a.name) ?? new Map<string, number>();
    of.set(a.node, a.index);
    holders.set(a.name, of);
  }

  const actions: FleetAction[] = [];
  const ordered = [...deployments.values()].sort((a, b) => compareIds(a.request.name, b.request.name));
  for (const { request, proof } of ordered) {
    const of = holders.get(request.name) ?? new Map<string, number>();
    holders.set(request.name, of);
    for (let index = 0; index < request.replicas; index++) {
      const replica: ReplicaKey = { name: request.name, index };
      const a = assigned.get(key(replica));
      if (a !== undefined && LEFT_ALONE.has(a.state)) continue;
      if (proof === 'expired') {
        actions.push({ kind: 'expire', replica });
        continue;
      }
      if (a !== undefined && a.node !== null) {
        // A waiting replica waits for its node even if its request has changed since.
        if (fresh.has(a.node) || a.state === 'waiting') continue;
        const why: WaitWhy | null =
          request.blockDevices > 0 ? 'block devices' : request.node !== null ? 'pinned' : null;
        if (why !== null) {
          actions.push({ kind: 'wait', replica, node: a.node, why });
          continue;
        }
        of.delete(a.node);
      }
      // Nodes holding another replica of this deployment do not qualify, with that as the reason.
      const excluded = new Map([...of].map(([node, i]) => [node, `holds replica ${i} of ${request.name}`]));
      const placed = place(rows(), request.requirements, {
        now,
        freshMs: lostAfter,
        vm: request.name,
        excluded,
        ...(request.node === null ? {} : { node: request.node }),
      });
      if (!placed.ok) {
        actions.push({ kind: 'unplaced', replica, reasons: reasonsOf(placed.error) });
        continue;
      }
      const node = placed.value.node;
      actions.push({ kind: 'place', replica, node, generation: (a?.generation ?? 0) + 1 });
      of.set(node, index);
      const before = held.get(node) ?? NOTHING_RESERVED;
      held.set(node, { memoryMiB: before.memoryMiB + request.requirements.memoryMiB, vms: before.vms + 1 });
    }
  }
  const gone = input.assignments
    .filter(retired)
    .sort((a, b) => compareIds(a.name, b.name) || a.index - b.index);
  for (const a of gone) actions.push({ kind: 'retire', replica: { name: a.name, index: a.index } });
  return actions;
}

/** The reason per node of a failed placement: every node's, or the requested one's. */
function reasonsOf(error: {
  readonly message: string;
  readonly details?: Readonly<Record<string, unknown>>;
}) {
  const details = error.details ?? {};
  if (typeof details.node === 'string') {
    const reasons = Array.isArray(details.reasons) ? (details.reasons as string[]) : [error.message];
    return { [details.node]: reasons };
  }
  return (details.reasons ?? {}) as Readonly<Record<string, readonly string[]>>;
}

/**
 * The copies a node that comes back must destroy before it reports: those whose replica is gone
 * (its deployment removed or scaled down), assigned elsewhere or to no node, assigned at a higher
 * generation, or expired. `runs`: the deployment copies it runs, in its order.
 */
export function staleCopies(
  nodeId: string,
  runs: readonly RunningCopy[],
  assignments: readonly Assignment[],
): RunningCopy[] {
  const assigned = new Map(assignments.map((a) => [key(a), a]));
  return runs.filter((copy) => {
    const a = assigned.get(key(copy));
    return a === undefined || a.node !== nodeId || a.generation > copy.generation || a.state === 'expired';
  });
}
