// Policy commands (albatross-semantics.md §3.2, §4): info folds the tree; add and remove plan
// the new tree with src/resources, set it and commit it, and put the old one back if the write fails.

import type { Name, Path } from '../resources/name.js';
import type { Policy } from '../resources/policy.js';
import * as T from '../resources/tree.js';
import type { EngineContext } from './context.js';
import { type EngineResponse, failure, reply, TEXT, text } from './replies.js';

/** Policy commands run in the engine's queue: they set the tree and commit. */
export type PolicyContext = Pick<EngineContext, 'tree' | 'setTree' | 'commit'>;

export function policyInfo(tree: T.Tree, name: Name): EngineResponse {
  return reply({
    type: 'policies',
    entries: T.foldPolicies(tree, name.path).map(([n, policy]) => ({ name: n, policy })),
  });
}

export async function addPolicy(ctx: PolicyContext, path: Path, policy: Policy): Promise<EngineResponse> {
  const next = T.addPolicy(ctx.tree(), path, policy);
  if (!next.ok) return failure(next.error.message);
  if (next.value === ctx.tree()) return text(TEXT.policyUnchanged);
  return commitTree(ctx, next.value, path, TEXT.policyAdded);
}

export async function removePolicy(ctx: PolicyContext, path: Path): Promise<EngineResponse> {
  const next = T.removePolicy(ctx.tree(), path);
  if (!next.ok) return failure(next.error.message);
  return commitTree(ctx, next.value, path, TEXT.policyRemoved);
}

async function commitTree(
  ctx: PolicyContext,
  next: T.Tree,
  path: Path,
  done: string,
): Promise<EngineResponse> {
  const before = ctx.tree();
  ctx.setTree(next);
  const saved = await ctx.commit([], [path]);
  if (saved.ok) return text(done);
  ctx.setTree(before);
  return failure(`could not write the state file: ${saved.error.message}`);
}
