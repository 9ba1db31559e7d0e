// Block devices in the resource tree: adding one within the block storage of every policy above
// it, removing a free one, and marking one used or free while it streams.

import { err, ok } from './errors.js';
import { type Name, printName, printPath } from './name.js';
import * as SM from './sortedmap.js';
import { findBlock } from './tree-lookup.js';
import {
  entriesOf,
  entryLabel,
  markBlocks,
  modify,
  type Node,
  nodesAlong,
  policyOf,
  type Tree,
  type TreeResult,
} from './tree-node.js';

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
