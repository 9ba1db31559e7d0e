// Unikernels in the resource tree: admission against the policy of their path and of every
// ancestor (their block devices become in use), and release.

import { err, ok, type Result } from './errors.js';
import { childName, type Name, printName, printPath } from './name.js';
import { list, missing, type Policy } from './policy.js';
import * as SM from './sortedmap.js';
import { findUnikernel } from './tree-lookup.js';
import {
  type Allocation,
  EMPTY_NODE,
  entriesOf,
  entryLabel,
  markBlocks,
  modify,
  type Node,
  nodesAlong,
  policyOf,
  type Tree,
  type TreeError,
  type TreeResult,
  type Usage,
} from './tree-node.js';

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
