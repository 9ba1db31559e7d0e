// Policies in the resource tree: adding one (it must fit inside its ancestors', contain those
// below it and hold its subtree's usage) and removing one.

import { err, ok, type Result } from './errors.js';
import { keysOutside, maxKey } from './multiset.js';
import { type Path, printName, printPath } from './name.js';
import { isSubPolicy, list, missing, type Policy, samePolicy } from './policy.js';
import { findPolicy, foldPolicies } from './tree-lookup.js';
import {
  applyDelta,
  type Delta,
  entriesOf,
  modify,
  type Node,
  nodesAlong,
  type Tree,
  type TreeError,
  type TreeResult,
  type Usage,
} from './tree-node.js';

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
