// Model-based properties of the resource tree: random sequences of operations run against the
// optimised tree and the naive model (resources-model.ts) must agree on every accept/reject and
// every aggregate, keep the invariants, never mutate their input, and admit∘release = identity.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { unwrap } from '../src/resources/errors.js';
import { childName, type Label, type Name, type Path, pathName, printPath } from '../src/resources/name.js';
import { isSubPolicy, makePolicy, type Policy } from '../src/resources/policy.js';
import * as T from '../src/resources/tree.js';
import { Model } from './resources-model.js';

const RUNS = Number(process.env.PROPERTY_RUNS ?? 1000);

// Few labels, CPUs and bridges, so that operations collide and limits bite.
const label = fc.constantFrom('a', 'b', 'c') as fc.Arbitrary<Label>;
const pathArb: fc.Arbitrary<Path> = fc.array(label, { maxLength: 3 });
const entryName: fc.Arbitrary<Name> = fc
  .tuple(fc.array(label, { maxLength: 2 }), label)
  .map(([p, l]) => childName(p, l));
const cpus = fc.uniqueArray(fc.integer({ min: 0, max: 3 }), { maxLength: 3 });
const bridges = fc.uniqueArray(fc.constantFrom('br0', 'br1', 'br2'), { maxLength: 2 });
const policyArb: fc.Arbitrary<Policy> = fc
  .record({
    vms: fc.integer({ min: 0, max: 5 }),
    memory: fc.integer({ min: 0, max: 60 }),
    cpuids: cpus,
    block: fc.option(fc.integer({ min: 0, max: 30 }), { nil: null }),
    bridges,
  })
  .map((input) => unwrap(makePolicy(input)));
const allocationArb: fc.Arbitrary<T.Allocation> = fc.record({
  memory: fc.integer({ min: 0, max: 25 }),
  cpuids: cpus,
  bridges,
  blocks: fc.uniqueArray(label, { maxLength: 2 }),
});

type Op =
  | { op: 'addPolicy'; path: Path; policy: Policy }
  | { op: 'removePolicy'; path: Path }
  | { op: 'admit'; name: Name; allocation: T.Allocation }
  | { op: 'release'; name: Name }
  | { op: 'addBlock'; name: Name; size: number }
  | { op: 'removeBlock'; name: Name };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({ op: fc.constant('addPolicy' as const), path: pathArb, policy: policyArb }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('removePolicy' as const), path: pathArb }) },
  {
    weight: 4,
    arbitrary: fc.record({ op: fc.constant('admit' as const), name: entryName, allocation: allocationArb }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('release' as const), name: entryName }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('addBlock' as const),
      name: entryName,
      size: fc.integer({ min: 0, max: 12 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('removeBlock' as const), name: entryName }) },
);

function runTree(tree: T.Tree, op: Op): T.TreeResult {
  switch (op.op) {
    case 'addPolicy':
      return T.addPolicy(tree, op.path, op.policy);
    case 'removePolicy':
      return T.removePolicy(tree, op.path);
    case 'admit':
      return T.admitUnikernel(tree, op.name, op.allocation);
    case 'release':
      return T.releaseUnikernel(tree, op.name);
    case 'addBlock':
      return T.addBlock(tree, op.name, op.size);
    case 'removeBlock':
      return T.removeBlock(tree, op.name);
  }
}

function runModel(model: Model, op: Op): string | null {
  switch (op.op) {
    case 'addPolicy':
      return model.addPolicy(op.path, op.policy);
    case 'removePolicy':
      return model.removePolicy(op.path);
    case 'admit':
      return model.admit(op.name, op.allocation);
    case 'release':
      return model.release(op.name);
    case 'addBlock':
      return model.addBlock(op.name, op.size);
    case 'removeBlock':
      return model.removeBlock(op.name);
  }
}

/** Every path the model mentions, with all their prefixes. */
function pathsOf(model: Model): Path[] {
  const seen = new Map<string, Path>([['', []]]);
  const add = (path: Path) => {
    for (let depth = 0; depth <= path.length; depth++)
      seen.set(printPath(path.slice(0, depth)), path.slice(0, depth));
  };
  for (const { path } of model.policies.values()) add(path);
  for (const { name } of model.vms.values()) add(name.path);
  for (const { name } of model.blocks.values()) add(name.path);
  return [...seen.values()];
}

function expectAgreement(tree: T.Tree, model: Model): void {
  for (const path of pathsOf(model)) {
    const real = T.usageAt(tree, path);
    const naive = model.usage(path);
    expect({ ...real, cpus: new Map(real.cpus), bridges: new Map(real.bridges) }, printPath(path)).toEqual(
      naive,
    );
    expect(T.findPolicy(tree, path)).toEqual(model.policies.get(printPath(path))?.policy);
  }
  expect(T.foldPolicies(tree, []).length).toBe(model.policies.size);
  expect(T.foldUnikernels(tree, []).length).toBe(model.vms.size);
  for (const [key, { name, size, inUse }] of model.blocks)
    expect(T.findBlock(tree, name), key).toEqual({ size, inUse });
  expect(T.foldBlocks(tree, []).length).toBe(model.blocks.size);
}

function expectInvariants(tree: T.Tree): void {
  const policies = T.foldPolicies(tree, []).map(([n, p]) => ({ path: n.path, policy: p }));
  for (const { path, policy } of policies) {
    // I1: every non-root policy is a sub-policy of each non-root ancestor.
    for (const above of T.collect(tree, path)) {
      if (above.path.length === 0 || above.path.length === path.length) continue;
      expect(isSubPolicy(above.policy, policy), `${printPath(above.path)} ⊇ ${printPath(path)}`).toEqual({
        ok: true,
        value: undefined,
      });
    }
    // I2: the usage of the subtree fits.
    const usage = T.usageAt(tree, path);
    expect(BigInt(usage.vms) <= policy.vms).toBe(true);
    expect(usage.memory <= policy.memory).toBe(true);
    expect([...usage.cpus.keys()].every((c) => policy.cpuids.includes(c))).toBe(true);
    expect([...usage.bridges.keys()].every((b) => policy.bridges.includes(b))).toBe(true);
    expect(usage.block <= (policy.block ?? 0)).toBe(true);
  }
  // I3: every block device a unikernel names is in use.
  for (const [name, allocation] of T.foldUnikernels(tree, [])) {
    for (const block of allocation.blocks)
      expect(T.findBlock(tree, childName(name.path, block))?.inUse).toBe(true);
  }
}

/** A canonical rendering, to prove an operation did not mutate its input in place. */
const snapshot = (tree: T.Tree) =>
  JSON.stringify(tree, (_key, value) =>
    value instanceof Map ? [...value.entries()] : typeof value === 'bigint' ? `${value}n` : value,
  );

describe('resource tree against the naive model', () => {
  it('agrees on every accept/reject and aggregate, keeps invariants, never mutates', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 40 }), (ops) => {
        let tree = T.emptyTree;
        const model = new Model();
        for (const op of ops) {
          const before = snapshot(tree);
          const result = runTree(tree, op);
          const expected = runModel(model, op);
          expect(
            result.ok ? null : result.error.code,
            JSON.stringify(op, (_k, v) => (typeof v === 'bigint' ? Number(v) : v)),
          ).toBe(expected);
          expect(snapshot(tree)).toBe(before);
          if (result.ok) tree = result.value;
          expectAgreement(tree, model);
          expectInvariants(tree);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('admit then release gives back an equal tree', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 25 }), entryName, allocationArb, (ops, name, allocation) => {
        let tree = T.emptyTree;
        for (const op of ops) {
          const result = runTree(tree, op);
          if (result.ok) tree = result.value;
        }
        const admitted = T.admitUnikernel(tree, name, allocation);
        fc.pre(admitted.ok);
        if (admitted.ok) expect(unwrap(T.releaseUnikernel(admitted.value, name))).toEqual(tree);
      }),
      { numRuns: RUNS },
    );
  });

  it('a policy path names itself in listings', () => {
    fc.assert(
      fc.property(pathArb, policyArb, (path, policy) => {
        const tree = unwrap(T.addPolicy(T.emptyTree, path, policy));
        expect(T.foldPolicies(tree, path)).toEqual([[pathName([]), policy]]);
      }),
      { numRuns: RUNS },
    );
  });
});
