// The resource tree's nodes: what each holds, the aggregates of its whole subtree, and the one
// path rebuild (`modify`) through which every change of the tree goes, sharing all off the path.
//
// Shape. A unikernel or block device named `p:l` lives in the `unikernels`/`blocks` map of the
// node at path `p` under label `l`; the policy of path `p:` lives on that node. Every node keeps
// aggregates of its whole subtree (usage, and the spread of the policies in it), updated along
// the path on every change, so no operation walks a subtree.

import type { PetrelError, Result } from './errors.js';
import { EMPTY as EMPTY_MULTISET, type Multiset, shift } from './multiset.js';
import type { Label, Path } from './name.js';
import type { Policy } from './policy.js';
import type { SortedMap } from './sortedmap.js';
import * as SM from './sortedmap.js';

/** What a running (or starting) unikernel takes from the tree. */
export interface Allocation {
  /** MiB. */
  readonly memory: number;
  readonly cpuids: readonly number[];
  /** Host bridges its network interfaces attach to. */
  readonly bridges: readonly string[];
  /** Labels of the block devices it uses, all at the unikernel's own path. */
  readonly blocks: readonly Label[];
}

export interface BlockDevice {
  /** MiB, ≥ 1. */
  readonly size: number;
  readonly inUse: boolean;
}

/** Usage of a whole subtree. */
export interface Usage {
  readonly vms: number;
  readonly memory: number;
  /** How many unikernels are pinned to each CPU id. */
  readonly cpus: Multiset<number>;
  /** How many unikernels attach to each bridge (one count per unikernel and bridge). */
  readonly bridges: Multiset<string>;
  /** Sum of the sizes of all block devices, in use or not. */
  readonly block: number;
}

/** The spread of the policies of a subtree: what the largest of them would need from a parent. */
export interface PolicySpread {
  readonly vms: Multiset<bigint>;
  readonly memory: Multiset<number>;
  /** Only policies that allow block storage; a policy with block none needs nothing. */
  readonly block: Multiset<number>;
  readonly cpus: Multiset<number>;
  readonly bridges: Multiset<string>;
}

export interface Node {
  readonly policy: Policy | null;
  readonly unikernels: SortedMap<Allocation>;
  readonly blocks: SortedMap<BlockDevice>;
  readonly children: SortedMap<Node>;
  readonly usage: Usage;
  readonly policies: PolicySpread;
}

/** An immutable resource tree; build one with `emptyTree` and the operations below. */
export type Tree = Node;

export type TreeCode =
  | 'E_POLICY_VMS'
  | 'E_POLICY_MEMORY'
  | 'E_POLICY_CPUIDS'
  | 'E_POLICY_BRIDGES'
  | 'E_POLICY_BLOCK'
  | 'E_POLICY_NOT_FOUND'
  | 'E_UNIKERNEL_EXISTS'
  | 'E_UNIKERNEL_NOT_FOUND'
  | 'E_BLOCK_EXISTS'
  | 'E_BLOCK_NOT_FOUND'
  | 'E_BLOCK_IN_USE'
  | 'E_BLOCK_SIZE'
  | 'E_NAME_NOT_ENTRY';

export type TreeError = PetrelError<TreeCode>;

/** What every change returns: the new tree, or the rejection and no change. */
export type TreeResult = Result<Tree, TreeError>;

export const ZERO_USAGE: Usage = Object.freeze({
  vms: 0,
  memory: 0,
  cpus: EMPTY_MULTISET,
  bridges: EMPTY_MULTISET,
  block: 0,
});

const NO_POLICIES: PolicySpread = Object.freeze({
  vms: EMPTY_MULTISET,
  memory: EMPTY_MULTISET,
  block: EMPTY_MULTISET,
  cpus: EMPTY_MULTISET,
  bridges: EMPTY_MULTISET,
});

export const EMPTY_NODE: Node = Object.freeze({
  policy: null,
  unikernels: SM.EMPTY,
  blocks: SM.EMPTY,
  children: SM.EMPTY,
  usage: ZERO_USAGE,
  policies: NO_POLICIES,
});

export const emptyTree: Tree = EMPTY_NODE;

// ---------------------------------------------------------------------------------------------
// Aggregates: a change at a node is a list of deltas applied to it and to every ancestor.

export type Delta =
  | { readonly kind: 'unikernel'; readonly sign: 1 | -1; readonly allocation: Allocation }
  | { readonly kind: 'block'; readonly sign: 1 | -1; readonly size: number }
  | { readonly kind: 'policy'; readonly sign: 1 | -1; readonly policy: Policy };

export interface Aggregates {
  readonly usage: Usage;
  readonly policies: PolicySpread;
}

export function applyDelta({ usage, policies }: Aggregates, delta: Delta): Aggregates {
  const { sign } = delta;
  switch (delta.kind) {
    case 'unikernel': {
      const { allocation } = delta;
      return {
        usage: {
          vms: usage.vms + sign,
          memory: usage.memory + sign * allocation.memory,
          cpus: shift(usage.cpus, allocation.cpuids, sign),
          bridges: shift(usage.bridges, allocation.bridges, sign),
          block: usage.block,
        },
        policies,
      };
    }
    case 'block':
      return { usage: { ...usage, block: usage.block + sign * delta.size }, policies };
    case 'policy': {
      const { policy } = delta;
      return {
        usage,
        policies: {
          vms: shift(policies.vms, [policy.vms], sign),
          memory: shift(policies.memory, [policy.memory], sign),
          block: policy.block === null ? policies.block : shift(policies.block, [policy.block], sign),
          cpus: shift(policies.cpus, policy.cpuids, sign),
          bridges: shift(policies.bridges, policy.bridges, sign),
        },
      };
    }
  }
}

export function isEmptyNode(node: Node): boolean {
  return (
    node.policy === null && node.unikernels.size === 0 && node.blocks.size === 0 && node.children.size === 0
  );
}

/** The entries of a node that an operation may change at the node it targets. */
export type Entries = Pick<Node, 'policy' | 'unikernels' | 'blocks'>;

export const entriesOf = ({ policy, unikernels, blocks }: Node): Entries => ({ policy, unikernels, blocks });

/**
 * Rebuilds the path from the root to `path`: `edit` changes the entries of the node at `path`
 * (an empty node if there was none), `deltas` update the aggregates of that node and of every
 * ancestor, and nodes left empty are pruned so that undoing a change gives back an equal tree.
 * Each level allocates one node; everything off the path is shared.
 */
export function modify(
  node: Node,
  path: Path,
  depth: number,
  deltas: readonly Delta[],
  edit: (n: Node) => Entries,
): Node {
  let { usage, policies }: Aggregates = node;
  for (const delta of deltas) ({ usage, policies } = applyDelta({ usage, policies }, delta));
  if (depth === path.length) {
    const { policy, unikernels, blocks } = edit(node);
    return { policy, unikernels, blocks, children: node.children, usage, policies };
  }
  const label = path[depth] as Label;
  const child = modify(SM.get(node.children, label) ?? EMPTY_NODE, path, depth + 1, deltas, edit);
  const children = isEmptyNode(child) ? SM.remove(node.children, label) : SM.set(node.children, label, child);
  return { policy: node.policy, unikernels: node.unikernels, blocks: node.blocks, children, usage, policies };
}

/** The nodes from the root down to `path`, as far as they exist. */
export function nodesAlong(tree: Tree, path: Path): Node[] {
  const nodes: Node[] = [tree];
  let node: Node | undefined = tree;
  for (const label of path) {
    node = SM.get(node.children, label);
    if (node === undefined) break;
    nodes.push(node);
  }
  return nodes;
}

export function nodeAt(tree: Tree, path: Path): Node | undefined {
  const nodes = nodesAlong(tree, path);
  return nodes.length === path.length + 1 ? nodes[path.length] : undefined;
}
