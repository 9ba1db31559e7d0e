// A node's capacity as the fleet sees it, computed from the engine's resource tree (pure): the
// root policy minus what the whole tree has allocated, and the names of the unikernels in it.

import { printName } from '../resources/name.js';
import * as T from '../resources/tree.js';
import type { NodeCapacity } from './capabilities.js';

const clamp = (n: bigint): number =>
  Number(n > BigInt(Number.MAX_SAFE_INTEGER) ? BigInt(Number.MAX_SAFE_INTEGER) : n);

/**
 * Free = the root policy's limit minus the usage of the whole tree, for memory, unikernel count
 * and block storage (never below 0: a root policy lowered under its usage offers nothing). CPU ids
 * are pins, not consumed: `cpus` is how many the root policy lists. A tree without a root policy
 * (before start-up placed it) offers nothing.
 */
export function capacityOf(tree: T.Tree): NodeCapacity {
  const root = T.findPolicy(tree, []);
  const used = T.usageAt(tree, []);
  const unikernels = T.foldUnikernels(tree, []).map(([name]) => printName(name));
  if (root === undefined) {
    return {
      free: { memoryMiB: 0, vms: 0, blockStorageMiB: 0, cpus: 0 },
      total: { memoryMiB: 0, vms: 0, blockStorageMiB: 0 },
      unikernels,
    };
  }
  const block = root.block ?? 0;
  const vms = root.vms - BigInt(used.vms);
  return {
    free: {
      memoryMiB: Math.max(0, root.memory - used.memory),
      vms: vms > 0n ? clamp(vms) : 0,
      blockStorageMiB: Math.max(0, block - used.block),
      cpus: root.cpuids.length,
    },
    total: { memoryMiB: root.memory, vms: clamp(root.vms), blockStorageMiB: block },
    unikernels,
  };
}
