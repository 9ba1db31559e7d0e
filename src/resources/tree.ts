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
// Complexity, for a tree of depth d, fan-out f, c distinct CPU ids and b distinct bridges in
// use, and v distinct limit values among policies:
//   admitUnikernel, releaseUnikernel, addBlock, removeBlock, setBlockInUse: O(d · (f + c + b))
//   addPolicy, removePolicy: O(d · (f + c + b + v)) when accepted; a rejection by a descendant
//     policy additionally walks that subtree once to name the offending policy.
//   find*, collect: O(d).   fold*: O(size of the listed subtree · log f).
// The f term is the copy of one node's child map per level (structural sharing elsewhere).
// Rejected operations return the very same error without building anything.
//
// The tree's parts, each in its own file: its nodes and the path rebuild every change goes
// through (tree-node.ts), look-ups and listings (tree-lookup.ts), policies (tree-policies.ts),
// and the entries of a path, unikernels and block devices (tree-entries.ts). This file is what
// the rest of Petrel imports: the operations above and their types, nothing of the nodes' insides.

export {
  addBlock,
  admitUnikernel,
  releaseUnikernel,
  removeBlock,
  setBlockInUse,
} from './tree-entries.js';
export {
  collect,
  findBlock,
  findPolicy,
  findUnikernel,
  foldBlocks,
  foldPolicies,
  foldUnikernels,
  usageAt,
} from './tree-lookup.js';
export {
  type Allocation,
  type BlockDevice,
  emptyTree,
  type Tree,
  type TreeCode,
  type TreeError,
  type TreeResult,
  type Usage,
} from './tree-node.js';
export { addPolicy, removePolicy } from './tree-policies.js';
