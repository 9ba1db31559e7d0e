// Reading the resource tree: one policy, unikernel or block device, a subtree's usage, the
// policies above a path, and listings of a subtree in Albatross' order.

import { childName, type Label, type Name, type Path, pathName } from './name.js';
import type { Policy } from './policy.js';
import type { SortedMap } from './sortedmap.js';
import * as SM from './sortedmap.js';
import {
  type Allocation,
  type BlockDevice,
  type Node,
  nodeAt,
  nodesAlong,
  type Tree,
  type Usage,
  ZERO_USAGE,
} from './tree-node.js';

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
