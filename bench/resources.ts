// Benchmark: admission and policy insertion on resource trees of 1k, 10k and 100k unikernels
// (depth 4: three path levels plus the unikernel's label, policies on every path). Prints ns/op
// per size and the 100k/1k ratio; target: ratio ≤ 2 (costs O(depth), not O(subtree)).
// Run: npm run bench -- resources

import { unwrap } from '../src/resources/errors.js';
import { childName, type Label, type Path } from '../src/resources/name.js';
import { makePolicy } from '../src/resources/policy.js';
import * as T from '../src/resources/tree.js';

const SIZES = [1_000, 10_000, 100_000];
const OPS = 20_000;
const ROUNDS = 7;

const label = (i: number) => `n${i}` as Label;
const policy = (vms: number, memory: number) =>
  unwrap(makePolicy({ vms, memory, cpuids: [0, 1], block: 1_000_000, bridges: ['br0', 'br1'] }));

interface Fixture {
  tree: T.Tree;
  leaves: Path[];
  middles: Path[];
}

/** `size` unikernels spread over a tree of fan-out f = ⌈size^(1/4)⌉, so depth stays 4. */
function build(size: number): Fixture {
  const fanOut = Math.ceil(size ** 0.25);
  let tree = unwrap(T.addPolicy(T.emptyTree, [], policy(size * 2, size * 1000)));
  const leaves: Path[] = [];
  const middles: Path[] = [];
  for (let a = 0; a < fanOut; a++) {
    tree = unwrap(T.addPolicy(tree, [label(a)], policy(size * 2, size * 1000)));
    for (let b = 0; b < fanOut; b++) {
      const middle = [label(a), label(b)];
      middles.push(middle);
      tree = unwrap(T.addPolicy(tree, middle, policy(size, size * 100)));
      for (let c = 0; c < fanOut; c++) {
        const leaf = [label(a), label(b), label(c)];
        leaves.push(leaf);
        tree = unwrap(T.addPolicy(tree, leaf, policy(size, size * 100)));
      }
    }
  }
  for (let i = 0; i < size; i++) {
    const leaf = leaves[i % leaves.length] as Path;
    tree = unwrap(
      T.admitUnikernel(tree, childName(leaf, label(i)), {
        memory: 1,
        cpuids: [i % 2],
        bridges: ['br0'],
        blocks: [],
      }),
    );
  }
  return { tree, leaves, middles };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

/** Median over rounds of the mean ns per call of `op(i)`. */
function measure(op: (i: number) => unknown): number {
  for (let i = 0; i < OPS; i++) op(i); // warm-up
  const rounds: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < OPS; i++) op(i);
    rounds.push(Number(process.hrtime.bigint() - start) / OPS);
  }
  return median(rounds);
}

const results = {
  admit: {} as Record<number, number>,
  release: {} as Record<number, number>,
  'insert policy': {} as Record<number, number>,
};
for (const size of SIZES) {
  const { tree, leaves, middles } = build(size);
  const fresh = (i: number) => childName(leaves[(i * 7919) % leaves.length] as Path, `new${i}` as Label);
  const allocation = { memory: 1, cpuids: [1], bridges: ['br1'], blocks: [] };
  results.admit[size] = measure((i) => unwrap(T.admitUnikernel(tree, fresh(i), allocation)));
  const admitted = Array.from(
    { length: 64 },
    (_, i) => [unwrap(T.admitUnikernel(tree, fresh(i), allocation)), fresh(i)] as const,
  );
  results.release[size] = measure((i) => {
    const [withOne, name] = admitted[i % admitted.length] as (typeof admitted)[number];
    return unwrap(T.releaseUnikernel(withOne, name));
  });
  // Replacing a mid-level policy checks its ancestors, every policy below it and its usage.
  const replacement = policy(size + 1, size * 100 + 1);
  results['insert policy'][size] = measure((i) =>
    unwrap(T.addPolicy(tree, middles[(i * 31) % middles.length] as Path, replacement)),
  );
}

console.log(`resource tree, depth 4, ns/op (median of ${ROUNDS} rounds of ${OPS} ops)`);
console.log(
  ['operation', ...SIZES.map((s) => `${s / 1000}k VMs`), '100k/1k'].map((c) => c.padStart(16)).join(''),
);
for (const [operation, bySize] of Object.entries(results)) {
  const ratio = (bySize[100_000] as number) / (bySize[1_000] as number);
  console.log(
    [
      operation,
      ...SIZES.map((s) => (bySize[s] as number).toFixed(0)),
      `${ratio.toFixed(2)}×${ratio <= 2 ? '' : ' (over 2×)'}`,
    ]
      .map((c) => c.padStart(16))
      .join(''),
  );
}
