// The entries of a path in the resource tree: unikernels (admitted against the policy of their
// path and of every ancestor, their block devices then in use; released) and block devices
// (added within the block storage of every policy above them, removed when free, marked used
// or free while they stream).

import { err, ok, type Result } from './errors.js';
import { childName, type Label, type Name, type Path, pathName, printName, printPath } from './name.js';
import { list, missing, type Policy } from './policy.js';
import type { SortedMap } from './sortedmap.js';
import * as SM from './sortedmap.js';
import { findBlock, findUnikernel } from './tree-lookup.js';
import {
  type Allocation,
  type BlockDevice,
  EMPTY_NODE,
  entriesOf,
  modify,
  type Node,
  nodesAlong,
  type Tree,
  type TreeError,
  type TreeResult,
  type Usage,
} from './tree-node.js';

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

// ---------------------------------------------------------------------------------------------
// Unikernels

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
