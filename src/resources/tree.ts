// The resource tree: policies, unikernel allocations and block devices in one immutable trie
// keyed by labels, with every admission check of albatross-semantics.md §4 and Petrel (a).
//
// Invariants (hold for every tree these functions return):
//   I1  every policy below the root is a sub-policy of each of its ancestors' policies except the
//       root's (the root policy describes this host; one delegation chain serves many hosts);
//   I2  for every path with a policy, the usage of its whole subtree fits that policy:
//       unikernel count, memory sum, CPU ids ⊆, bridges ⊆, block storage sum ≤ (none = 0);
//   I3  every block device a unikernel names exists at its path and is in use, and no two
//       unikernels name the same device.
//
// Shape. A unikernel or block device named `p:l` lives in the `unikernels`/`blocks` map of the
// node at path `p` under label `l`; the policy of path `p:` lives on that node. Every node keeps
// aggregates of its whole subtree (usage, and the spread of the policies in it), updated along
// the path on every change, so no operation walks a subtree.
//
// Complexity, for a tree of depth d, fan-out f, c distinct CPU ids and b distinct bridges in
// use, and v distinct limit values among policies:
//   admitUnikernel, releaseUnikernel, addBlock, removeBlock, setBlockInUse: O(d · (f + c + b))
//   addPolicy, removePolicy: O(d · (f + c + b + v)) when accepted; a rejection by a descendant
//     policy additionally walks that subtree once to name the offending policy.
//   find*, collect: O(d).   fold*: O(size of the listed subtree · log f).
// The f term is the copy of one node's child map per level (structural sharing elsewhere).
// Rejected operations return the very same error without building anything.

import { err, ok, type PetrelError, type Result } from './errors.js';
import { EMPTY as EMPTY_MULTISET, keysOutside, type Multiset, maxKey, shift } from './multiset.js';
import { childName, type Label, type Name, type Path, pathName, printName, printPath } from './name.js';
import { isSubPolicy, list, missing, type Policy, samePolicy } from './policy.js';
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
interface PolicySpread {
  readonly vms: Multiset<bigint>;
  readonly memory: Multiset<number>;
  /** Only policies that allow block storage; a policy with block none needs nothing. */
  readonly block: Multiset<number>;
  readonly cpus: Multiset<number>;
  readonly bridges: Multiset<string>;
}

interface Node {
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

const ZERO_USAGE: Usage = Object.freeze({
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

const EMPTY_NODE: Node = Object.freeze({
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

type Delta =
  | { readonly kind: 'unikernel'; readonly sign: 1 | -1; readonly allocation: Allocation }
  | { readonly kind: 'block'; readonly sign: 1 | -1; readonly size: number }
  | { readonly kind: 'policy'; readonly sign: 1 | -1; readonly policy: Policy };

interface Aggregates {
  readonly usage: Usage;
  readonly policies: PolicySpread;
}

function applyDelta({ usage, policies }: Aggregates, delta: Delta): Aggregates {
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

function isEmptyNode(node: Node): boolean {
  return (
    node.policy === null && node.unikernels.size === 0 && node.blocks.size === 0 && node.children.size === 0
  );
}

/** The entries of a node that an operation may change at the node it targets. */
type Entries = Pick<Node, 'policy' | 'unikernels' | 'blocks'>;

const entriesOf = ({ policy, unikernels, blocks }: Node): Entries => ({ policy, unikernels, blocks });

/**
 * Rebuilds the path from the root to `path`: `edit` changes the entries of the node at `path`
 * (an empty node if there was none), `deltas` update the aggregates of that node and of every
 * ancestor, and nodes left empty are pruned so that undoing a change gives back an equal tree.
 * Each level allocates one node; everything off the path is shared.
 */
function modify(
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
function nodesAlong(tree: Tree, path: Path): Node[] {
  const nodes: Node[] = [tree];
  let node: Node | undefined = tree;
  for (const label of path) {
    node = SM.get(node.children, label);
    if (node === undefined) break;
    nodes.push(node);
  }
  return nodes;
}

function nodeAt(tree: Tree, path: Path): Node | undefined {
  const nodes = nodesAlong(tree, path);
  return nodes.length === path.length + 1 ? nodes[path.length] : undefined;
}

// ---------------------------------------------------------------------------------------------
// Look-ups

export function findPolicy(tree: Tree, path: Path): Policy | undefined {
  return nodeAt(tree, path)?.policy ?? undefined;
}

export function findUnikernel(tree: Tree, name: Name): Allocation | undefined {
  return name.label === null
    ? undefined
    : SM.get(nodeAt(tree, name.path)?.unikernels ?? SM.EMPTY, name.label);
}

export function findBlock(tree: Tree, name: Name): BlockDevice | undefined {
  return name.label === null ? undefined : SM.get(nodeAt(tree, name.path)?.blocks ?? SM.EMPTY, name.label);
}

/** Usage of the whole subtree at `path` (zero where nothing is). */
export function usageAt(tree: Tree, path: Path): Usage {
  return nodeAt(tree, path)?.usage ?? ZERO_USAGE;
}

/** The policies at `path` and at every ancestor that has one, deepest first. */
export function collect(tree: Tree, path: Path): { path: Path; policy: Policy }[] {
  const found: { path: Path; policy: Policy }[] = [];
  nodesAlong(tree, path).forEach((node, depth) => {
    if (node.policy !== null) found.unshift({ path: path.slice(0, depth), policy: node.policy });
  });
  return found;
}

/**
 * Entries at or below `path`, named relative to it, in Albatross' order: a node before its
 * descendants, siblings in descending bytewise label order (albatross-semantics.md §3.3).
 */
export function foldPolicies(tree: Tree, path: Path): [Name, Policy][] {
  const out: [Name, Policy][] = [];
  const walk = (node: Node, relative: Label[]) => {
    if (node.policy !== null) out.push([pathName(relative), node.policy]);
    for (const [label, child] of SM.descending(node.children)) walk(child, [...relative, label as Label]);
  };
  const start = nodeAt(tree, path);
  if (start !== undefined) walk(start, []);
  return out;
}

export function foldUnikernels(tree: Tree, path: Path): [Name, Allocation][] {
  return foldEntries(tree, path, (node) => node.unikernels);
}

export function foldBlocks(tree: Tree, path: Path): [Name, BlockDevice][] {
  return foldEntries(tree, path, (node) => node.blocks);
}

function foldEntries<V>(tree: Tree, path: Path, entries: (node: Node) => SortedMap<V>): [Name, V][] {
  const out: [Name, V][] = [];
  // An entry `p:l` sits where Albatross' trie keeps it: before the subtree of path `p:l:`, so
  // the two descending sequences (entries, child paths) are merged label by label.
  const walk = (node: Node, relative: Label[]) => {
    const here = [...SM.descending(entries(node))];
    const below = [...SM.descending(node.children)];
    let i = 0;
    let j = 0;
    while (i < here.length || j < below.length) {
      const entry = here[i];
      const child = below[j];
      if (entry !== undefined && (child === undefined || entry[0] >= child[0])) {
        out.push([childName(relative, entry[0] as Label), entry[1]]);
        i++;
      } else if (child !== undefined) {
        walk(child[1], [...relative, child[0] as Label]);
        j++;
      }
    }
  };
  const start = nodeAt(tree, path);
  if (start !== undefined) walk(start, []);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Policies

/**
 * Inserts or replaces the policy of `path` (albatross-semantics.md §4.3 with Petrel (a)):
 * every non-root ancestor's policy must contain it, it must contain every policy below it, and
 * the current usage of its subtree must fit. An identical policy returns the same tree object,
 * unchecked (the caller replies `no modification of policy`).
 */
export function addPolicy(tree: Tree, path: Path, policy: Policy): TreeResult {
  const nodes = nodesAlong(tree, path);
  const existing = nodes.length === path.length + 1 ? (nodes[path.length] as Node) : undefined;
  if (existing?.policy && samePolicy(existing.policy, policy)) return ok(tree);

  for (let depth = Math.min(nodes.length, path.length) - 1; depth >= 1; depth--) {
    const above = (nodes[depth] as Node).policy;
    if (above === null) continue;
    const fits = isSubPolicy(above, policy);
    if (!fits.ok)
      return err(fits.error.code, fits.error.message, {
        ...fits.error.details,
        path: printPath(path.slice(0, depth)),
      });
  }

  if (existing !== undefined) {
    if (path.length > 0) {
      const below = descendantsFit(existing, policy);
      if (!below.ok) return below;
    }
    const usage = usageFits(existing.usage, policy);
    if (!usage.ok) return usage;
  }

  const deltas: Delta[] = [{ kind: 'policy', sign: 1, policy }];
  if (existing?.policy) deltas.unshift({ kind: 'policy', sign: -1, policy: existing.policy });
  return ok(modify(tree, path, 0, deltas, (node) => ({ ...entriesOf(node), policy })));
}

/** Every policy strictly below `node` must be a sub-policy of `policy`; checked on aggregates. */
function descendantsFit(node: Node, policy: Policy): Result<void, TreeError> {
  const own = node.policy;
  const spread =
    own === null ? node.policies : applyDelta(node, { kind: 'policy', sign: -1, policy: own }).policies;
  const maxVms = maxKey(spread.vms);
  const maxMemory = maxKey(spread.memory);
  const maxBlock = maxKey(spread.block);
  const allFit =
    (maxVms === undefined || maxVms <= policy.vms) &&
    (maxMemory === undefined || maxMemory <= policy.memory) &&
    keysOutside(spread.cpus, policy.cpuids).length === 0 &&
    keysOutside(spread.bridges, policy.bridges).length === 0 &&
    (maxBlock === undefined || (policy.block !== null && maxBlock <= policy.block));
  if (allFit) return ok(undefined);
  // Name the first offending policy in listing order, as a walk over the policies would.
  for (const [relative, below] of foldPolicies(node, [])) {
    if (relative.path.length === 0) continue;
    const fits = isSubPolicy(policy, below);
    if (!fits.ok)
      return err(fits.error.code, fits.error.message, { ...fits.error.details, below: printName(relative) });
  }
  throw new Error('policy spread and policies disagree'); // unreachable while aggregates are exact
}

/** The current usage of a subtree must fit a new policy for it (§4.3 step 3, in that order). */
function usageFits(usage: Usage, policy: Policy): Result<void, TreeError> {
  const cpus = keysOutside(usage.cpus, policy.cpuids);
  if (cpus.length > 0) {
    return err('E_POLICY_CPUIDS', `policy does not allow CPUids ${list(cpus)}`, { missing: cpus });
  }
  const used = [...usage.bridges.keys()].sort();
  if (missing(used, policy.bridges).length > 0) {
    return err(
      'E_POLICY_BRIDGES',
      `policy allows bridges ${list(policy.bridges)}, which is not a superset of ${list(used)}`,
      { limit: policy.bridges, usage: used },
    );
  }
  if (BigInt(usage.vms) > policy.vms) {
    return err(
      'E_POLICY_VMS',
      `unikernel would exceed running unikernel limit set by policy to ${policy.vms}, running ${usage.vms}`,
      { limit: policy.vms, usage: usage.vms },
    );
  }
  if (usage.memory > policy.memory) {
    return err(
      'E_POLICY_MEMORY',
      `unikernel would exceed running memory limit set by policy to ${policy.memory} MB, used ${usage.memory} MB`,
      { limit: policy.memory, usage: usage.memory },
    );
  }
  const blockLimit = policy.block ?? 0;
  if (usage.block > blockLimit) {
    return err(
      'E_POLICY_BLOCK',
      `unikernel would exceed running block storage limit set by policy to ${blockLimit} MB, used ${usage.block} MB`,
      { limit: blockLimit, usage: usage.block },
    );
  }
  return ok(undefined);
}

/** Removes the policy of `path`, unconditionally (§4.7). */
export function removePolicy(tree: Tree, path: Path): TreeResult {
  const policy = findPolicy(tree, path);
  if (policy === undefined) return err('E_POLICY_NOT_FOUND', 'unknown policy', { path: printPath(path) });
  return ok(
    modify(tree, path, 0, [{ kind: 'policy', sign: -1, policy }], (node) => ({
      ...entriesOf(node),
      policy: null,
    })),
  );
}

// ---------------------------------------------------------------------------------------------
// Unikernels

/** ` (policy of alice:)` when the failing policy is an ancestor's (Petrel (a)). */
function policyOf(path: Path, depth: number, own: number): string {
  return depth === own ? '' : ` (policy of ${printName(pathName(path.slice(0, depth)))})`;
}

function entryLabel(name: Name, what: string): Result<Label, TreeError> {
  if (name.label !== null) return ok(name.label);
  return err('E_NAME_NOT_ENTRY', `${printName(name)} is a path, not a ${what} name`, {
    name: printName(name),
  });
}

/**
 * Admits a unikernel (albatross-semantics.md §4.4 with Petrel (a)): for its path and every
 * ancestor with a policy, root included, the usage of that whole subtree plus this unikernel
 * fits; each block device it names exists at its path and is free (and becomes in use); the
 * name is free.
 */
export function admitUnikernel(tree: Tree, name: Name, allocation: Allocation): TreeResult {
  const label = entryLabel(name, 'unikernel');
  if (!label.ok) return label;
  const { path } = name;
  const nodes = nodesAlong(tree, path);
  for (let depth = nodes.length - 1; depth >= 0; depth--) {
    const node = nodes[depth] as Node;
    if (node.policy === null) continue;
    const fits = admissionFits(node.policy, node.usage, allocation);
    if (!fits.ok) {
      const where = policyOf(path, depth, path.length);
      return err(fits.error.code, fits.error.message + where, {
        ...fits.error.details,
        path: printPath(path.slice(0, depth)),
      });
    }
  }
  const here = nodes.length === path.length + 1 ? (nodes[path.length] as Node) : EMPTY_NODE;
  for (const block of allocation.blocks) {
    const blockName = printName(childName(path, block));
    const device = SM.get(here.blocks, block);
    if (device === undefined)
      return err('E_BLOCK_NOT_FOUND', `block device ${blockName} not found`, { block: blockName });
    if (device.inUse)
      return err('E_BLOCK_IN_USE', `block device ${blockName} already in use`, { block: blockName });
  }
  if (SM.has(here.unikernels, label.value)) {
    return err('E_UNIKERNEL_EXISTS', 'unikernel with same name already exists', { name: printName(name) });
  }
  const frozen = freezeAllocation(allocation);
  return ok(
    modify(tree, path, 0, [{ kind: 'unikernel', sign: 1, allocation: frozen }], (node) => ({
      ...entriesOf(node),
      unikernels: SM.set(node.unikernels, label.value, frozen),
      blocks: markBlocks(node.blocks, frozen.blocks, true),
    })),
  );
}

function admissionFits(policy: Policy, usage: Usage, allocation: Allocation): Result<void, TreeError> {
  if (BigInt(usage.vms) + 1n > policy.vms) {
    return err('E_POLICY_VMS', `maximum amount of unikernels (${policy.vms}) reached`, {
      limit: policy.vms,
      usage: usage.vms,
    });
  }
  if (allocation.memory > policy.memory - usage.memory) {
    return err(
      'E_POLICY_MEMORY',
      `maximum allowed memory (${policy.memory}, used ${usage.memory}) would be exceeded (requesting ${allocation.memory})`,
      { limit: policy.memory, usage: usage.memory, request: allocation.memory },
    );
  }
  const cpus = missing(allocation.cpuids, policy.cpuids);
  if (cpus.length > 0) {
    return err('E_POLICY_CPUIDS', `CPUids ${list(cpus)} are not allowed by policy`, { missing: cpus });
  }
  const bridges = missing(allocation.bridges, policy.bridges);
  if (bridges.length > 0) {
    return err('E_POLICY_BRIDGES', `bridges ${list(bridges)} not allowed by policy`, { missing: bridges });
  }
  return ok(undefined);
}

function freezeAllocation(allocation: Allocation): Allocation {
  return Object.freeze({
    memory: allocation.memory,
    cpuids: Object.freeze([...new Set(allocation.cpuids)].sort((a, b) => a - b)),
    bridges: Object.freeze([...new Set(allocation.bridges)].sort()),
    blocks: Object.freeze([...new Set(allocation.blocks)].sort()),
  });
}

function markBlocks(
  blocks: SortedMap<BlockDevice>,
  labels: readonly Label[],
  inUse: boolean,
): SortedMap<BlockDevice> {
  let next = blocks;
  for (const label of labels) {
    const device = SM.get(next, label);
    if (device !== undefined) next = SM.set(next, label, Object.freeze({ size: device.size, inUse }));
  }
  return next;
}

/** Releases a unikernel's resources; its block devices become free. */
export function releaseUnikernel(tree: Tree, name: Name): TreeResult {
  const allocation = findUnikernel(tree, name);
  if (allocation === undefined || name.label === null) {
    return err('E_UNIKERNEL_NOT_FOUND', `unikernel ${printName(name)} not found`, { name: printName(name) });
  }
  const label = name.label;
  return ok(
    modify(tree, name.path, 0, [{ kind: 'unikernel', sign: -1, allocation }], (node) => ({
      ...entriesOf(node),
      unikernels: SM.remove(node.unikernels, label),
      blocks: markBlocks(node.blocks, allocation.blocks, false),
    })),
  );
}

// ---------------------------------------------------------------------------------------------
// Block devices

/**
 * Adds a free block device of `size` MiB (albatross-semantics.md §4.5 with Petrel (a)): for its
 * path and every ancestor with a policy, root included, block storage must be allowed and the
 * sum of that subtree's block devices plus this one must fit.
 */
export function addBlock(tree: Tree, name: Name, size: number): TreeResult {
  const label = entryLabel(name, 'block device');
  if (!label.ok) return label;
  if (findBlock(tree, name) !== undefined) {
    return err('E_BLOCK_EXISTS', 'block device with same name already exists', { block: printName(name) });
  }
  if (!Number.isSafeInteger(size) || size < 1) {
    return err('E_BLOCK_SIZE', 'overflow while computing bytes', { request: size });
  }
  const { path } = name;
  const nodes = nodesAlong(tree, path);
  for (let depth = nodes.length - 1; depth >= 0; depth--) {
    const { policy, usage } = nodes[depth] as Node;
    if (policy === null) continue;
    const where = policyOf(path, depth, path.length);
    const details = {
      limit: policy.block,
      usage: usage.block,
      request: size,
      path: printPath(path.slice(0, depth)),
    };
    if (policy.block === null)
      return err('E_POLICY_BLOCK', `no block devices are allowed by policy${where}`, details);
    if (size > policy.block - usage.block) {
      return err(
        'E_POLICY_BLOCK',
        `block device policy limit of ${policy.block} MB (used ${usage.block} MB) would be exceeded by the request (${size} MB)${where}`,
        details,
      );
    }
  }
  const device = Object.freeze({ size, inUse: false });
  return ok(
    modify(tree, path, 0, [{ kind: 'block', sign: 1, size }], (node) => ({
      ...entriesOf(node),
      blocks: SM.set(node.blocks, label.value, device),
    })),
  );
}

/** Removes a block device that no unikernel uses. */
export function removeBlock(tree: Tree, name: Name): TreeResult {
  const device = findBlock(tree, name);
  if (device === undefined || name.label === null) {
    return err('E_BLOCK_NOT_FOUND', 'remove block: not found', { block: printName(name) });
  }
  if (device.inUse) return err('E_BLOCK_IN_USE', 'remove block: is in use', { block: printName(name) });
  const label = name.label;
  return ok(
    modify(tree, name.path, 0, [{ kind: 'block', sign: -1, size: device.size }], (node) => ({
      ...entriesOf(node),
      blocks: SM.remove(node.blocks, label),
    })),
  );
}

/**
 * Marks a block device used or free outside a unikernel's admission (block set and dump hold a
 * device while they stream). Admission and release mark the devices of a unikernel themselves.
 */
export function setBlockInUse(tree: Tree, name: Name, inUse: boolean): TreeResult {
  const device = findBlock(tree, name);
  if (device === undefined || name.label === null) {
    return err('E_BLOCK_NOT_FOUND', `block device ${printName(name)} not found`, { block: printName(name) });
  }
  if (device.inUse === inUse) return ok(tree);
  const labels = [name.label];
  return ok(
    modify(tree, name.path, 0, [], (node) => ({
      ...entriesOf(node),
      blocks: markBlocks(node.blocks, labels, inUse),
    })),
  );
}
