import { describe, expect, it } from 'vitest';
import { unwrap } from '../../src/resources/errors.js';
import { printName } from '../../src/resources/name.js';
import {
  addBlock,
  addPolicy,
  admitUnikernel,
  collect,
  emptyTree,
  findBlock,
  findPolicy,
  findUnikernel,
  foldBlocks,
  foldPolicies,
  foldUnikernels,
  releaseUnikernel,
  removeBlock,
  removePolicy,
  setBlockInUse,
  type Tree,
  usageAt,
} from '../../src/resources/tree.js';
import { name, path, policy, vm } from './helpers.js';

const p1 = policy({ vms: 1, cpuids: [0], memory: 10, block: 5, bridges: ['service'] });
const withP1 = unwrap(addPolicy(emptyTree, path('alpha'), p1));

/** The error of a rejected operation, after checking that it handed back nothing new. */
function refused(result: { ok: boolean; error?: { code: string; message: string } }) {
  expect(result.ok).toBe(false);
  return { code: result.error?.code, message: result.error?.message };
}

describe('admitting unikernels under p1 at alpha (Albatross suite cases)', () => {
  it('admits a VM that fits exactly', () => {
    const tree = unwrap(admitUnikernel(withP1, name('alpha:vm'), vm({ memory: 10, bridges: ['service'] })));
    expect(findUnikernel(tree, name('alpha:vm'))).toEqual(vm({ memory: 10, bridges: ['service'] }));
    expect(usageAt(tree, path('alpha')).vms).toBe(1);
  });

  it.each([
    [{ cpuids: [1] }, 'E_POLICY_CPUIDS', 'CPUids 1 are not allowed by policy'],
    [
      { memory: 11 },
      'E_POLICY_MEMORY',
      'maximum allowed memory (10, used 0) would be exceeded (requesting 11)',
    ],
    [{ bridges: ['service2'] }, 'E_POLICY_BRIDGES', 'bridges service2 not allowed by policy'],
  ])('refuses %j', (change, code, message) => {
    expect(refused(admitUnikernel(withP1, name('alpha:vm'), vm(change)))).toEqual({ code, message });
  });

  it('refuses a second VM when the policy allows one', () => {
    const one = unwrap(admitUnikernel(withP1, name('alpha:a'), vm({ memory: 1 })));
    expect(refused(admitUnikernel(one, name('alpha:b'), vm({ memory: 1 })))).toEqual({
      code: 'E_POLICY_VMS',
      message: 'maximum amount of unikernels (1) reached',
    });
  });

  it('refuses a duplicate name and releases back to an equal tree', () => {
    const big = unwrap(addPolicy(emptyTree, path('alpha'), policy({ vms: 5, memory: 100 })));
    const one = unwrap(admitUnikernel(big, name('alpha:a'), vm()));
    expect(refused(admitUnikernel(one, name('alpha:a'), vm()))).toEqual({
      code: 'E_UNIKERNEL_EXISTS',
      message: 'unikernel with same name already exists',
    });
    expect(unwrap(releaseUnikernel(one, name('alpha:a')))).toEqual(big);
    expect(refused(releaseUnikernel(big, name('alpha:a'))).code).toBe('E_UNIKERNEL_NOT_FOUND');
  });

  it('refuses a path as a unikernel name', () => {
    expect(refused(admitUnikernel(withP1, name('alpha:'), vm())).code).toBe('E_NAME_NOT_ENTRY');
  });
});

describe('block devices under p1 at alpha', () => {
  it('admits 5 MiB and refuses 10', () => {
    expect(findBlock(unwrap(addBlock(withP1, name('alpha:disk'), 5)), name('alpha:disk'))).toEqual({
      size: 5,
      inUse: false,
    });
    expect(refused(addBlock(withP1, name('alpha:disk'), 10))).toEqual({
      code: 'E_POLICY_BLOCK',
      message: 'block device policy limit of 5 MB (used 0 MB) would be exceeded by the request (10 MB)',
    });
  });

  it('counts existing devices against the limit', () => {
    const three = unwrap(addBlock(withP1, name('alpha:a'), 3));
    expect(refused(addBlock(three, name('alpha:b'), 3)).message).toBe(
      'block device policy limit of 5 MB (used 3 MB) would be exceeded by the request (3 MB)',
    );
  });

  it('are refused under a policy without block storage', () => {
    const none = unwrap(addPolicy(emptyTree, path('alpha'), policy({ block: null })));
    expect(refused(addBlock(none, name('alpha:disk'), 1))).toEqual({
      code: 'E_POLICY_BLOCK',
      message: 'no block devices are allowed by policy',
    });
  });

  it('add, duplicate, remove, re-add', () => {
    const added = unwrap(addBlock(withP1, name('alpha:disk'), 2));
    expect(refused(addBlock(added, name('alpha:disk'), 2))).toEqual({
      code: 'E_BLOCK_EXISTS',
      message: 'block device with same name already exists',
    });
    const removed = unwrap(removeBlock(added, name('alpha:disk')));
    expect(removed).toEqual(withP1);
    expect(refused(removeBlock(removed, name('alpha:disk')))).toEqual({
      code: 'E_BLOCK_NOT_FOUND',
      message: 'remove block: not found',
    });
    expect(findBlock(unwrap(addBlock(removed, name('alpha:disk'), 5)), name('alpha:disk'))?.size).toBe(5);
  });

  it('refuses sizes below 1 MiB', () => {
    expect(refused(addBlock(withP1, name('alpha:disk'), 0))).toEqual({
      code: 'E_BLOCK_SIZE',
      message: 'overflow while computing bytes',
    });
  });

  it('are taken by the VM that names them and freed on release', () => {
    const disk = unwrap(addBlock(withP1, name('alpha:disk'), 5));
    const running = unwrap(admitUnikernel(disk, name('alpha:vm'), vm({ blocks: ['disk'] })));
    expect(findBlock(running, name('alpha:disk'))?.inUse).toBe(true);
    expect(refused(removeBlock(running, name('alpha:disk')))).toEqual({
      code: 'E_BLOCK_IN_USE',
      message: 'remove block: is in use',
    });
    const released = unwrap(releaseUnikernel(running, name('alpha:vm')));
    expect(released).toEqual(disk);
  });

  it('refuses a VM naming a missing block or one in use', () => {
    const big = unwrap(addPolicy(emptyTree, path('alpha'), policy({ vms: 3, memory: 100, block: 10 })));
    expect(refused(admitUnikernel(big, name('alpha:vm'), vm({ blocks: ['disk'] })))).toEqual({
      code: 'E_BLOCK_NOT_FOUND',
      message: 'block device alpha:disk not found',
    });
    const disk = unwrap(addBlock(big, name('alpha:disk'), 1));
    const first = unwrap(admitUnikernel(disk, name('alpha:one'), vm({ blocks: ['disk'] })));
    expect(refused(admitUnikernel(first, name('alpha:two'), vm({ blocks: ['disk'] })))).toEqual({
      code: 'E_BLOCK_IN_USE',
      message: 'block device alpha:disk already in use',
    });
  });

  it('can be held in use by a stream and freed again', () => {
    const disk = unwrap(addBlock(withP1, name('alpha:disk'), 5));
    const held = unwrap(setBlockInUse(disk, name('alpha:disk'), true));
    expect(findBlock(held, name('alpha:disk'))?.inUse).toBe(true);
    expect(unwrap(setBlockInUse(held, name('alpha:disk'), false))).toEqual(disk);
    expect(refused(setBlockInUse(disk, name('alpha:nope'), true)).code).toBe('E_BLOCK_NOT_FOUND');
  });
});

describe('inserting policies', () => {
  const child = policy({ vms: 1, cpuids: [0], memory: 10, block: 5, bridges: ['service'] });
  const underP1 = (p: ReturnType<typeof policy>) => addPolicy(withP1, path('alpha:beta'), p);

  it('accepts an equal sub-policy and refuses larger ones with the sub-policy texts', () => {
    expect(findPolicy(unwrap(underP1(child)), path('alpha:beta'))).toEqual(child);
    expect(refused(underP1(policy({ ...child, vms: 2 }))).message).toBe(
      'policy above allows 1 unikernels, which is fewer than 2',
    );
    expect(refused(underP1(policy({ ...child, memory: 11 }))).code).toBe('E_POLICY_MEMORY');
    expect(refused(underP1(policy({ ...child, cpuids: [1] }))).code).toBe('E_POLICY_CPUIDS');
    expect(refused(underP1(policy({ ...child, bridges: ['other'] }))).code).toBe('E_POLICY_BRIDGES');
    expect(refused(underP1(policy({ ...child, block: 6 }))).code).toBe('E_POLICY_BLOCK');
    expect(
      findPolicy(unwrap(underP1(policy({ ...child, block: null }))), path('alpha:beta'))?.block,
    ).toBeNull();
  });

  it('checks every non-root ancestor, not only the parent', () => {
    const deep = unwrap(addPolicy(withP1, path('alpha:beta'), child));
    expect(refused(addPolicy(deep, path('alpha:beta:gamma'), policy({ ...child, memory: 11 }))).code).toBe(
      'E_POLICY_MEMORY',
    );
    const gap = addPolicy(withP1, path('alpha:x:y'), policy({ ...child, vms: 2 }));
    expect(refused(gap).code).toBe('E_POLICY_VMS');
  });

  it('never compares with the root policy: a delegation may name what this host lacks', () => {
    const host = unwrap(addPolicy(emptyTree, path(''), policy({ vms: 10, memory: 100, cpuids: [0, 1] })));
    const delegated = addPolicy(
      host,
      path('alice'),
      policy({ vms: 50, memory: 4096, cpuids: [7], bridges: ['x'] }),
    );
    expect(delegated.ok).toBe(true);
  });

  it('above existing ones: larger accepted; smaller, disjoint or block none over block some refused', () => {
    const below = unwrap(addPolicy(emptyTree, path('a:b'), child));
    expect(addPolicy(below, path('a'), policy({ ...child, vms: 3, memory: 50, cpuids: [0, 1] })).ok).toBe(
      true,
    );
    expect(refused(addPolicy(below, path('a'), policy({ ...child, memory: 9 })))).toEqual({
      code: 'E_POLICY_MEMORY',
      message: 'policy above allows 9 MB memory, which is fewer than 10 MB',
    });
    expect(refused(addPolicy(below, path('a'), policy({ ...child, cpuids: [3] }))).code).toBe(
      'E_POLICY_CPUIDS',
    );
    expect(refused(addPolicy(below, path('a'), policy({ ...child, block: null })))).toEqual({
      code: 'E_POLICY_BLOCK',
      message: 'policy above allows 0 MB block storage, which is fewer than 5 MB',
    });
  });

  it('overwrites a policy, and an identical one is the same tree, unchecked', () => {
    const bigger = policy({ ...p1, vms: 2, memory: 20 });
    const replaced = unwrap(addPolicy(withP1, path('alpha'), bigger));
    expect(findPolicy(replaced, path('alpha'))).toEqual(bigger);
    expect(unwrap(addPolicy(replaced, path('alpha'), policy({ ...p1, vms: 2, memory: 20 })))).toBe(replaced);
  });

  it('must fit the usage already under it', () => {
    const big = unwrap(
      addPolicy(
        emptyTree,
        path('a'),
        policy({ vms: 5, memory: 100, cpuids: [0, 1], block: 10, bridges: ['br0'] }),
      ),
    );
    let tree = unwrap(admitUnikernel(big, name('a:x'), vm({ memory: 30, cpuids: [1], bridges: ['br0'] })));
    tree = unwrap(admitUnikernel(tree, name('a:y'), vm({ memory: 30, cpuids: [0] })));
    tree = unwrap(addBlock(tree, name('a:d'), 8));
    const shrink = (change: Parameters<typeof policy>[0]) =>
      refused(
        addPolicy(
          tree,
          path('a'),
          policy({ vms: 5, memory: 100, cpuids: [0, 1], block: 10, bridges: ['br0'], ...change }),
        ),
      );
    expect(shrink({ cpuids: [0] }).message).toBe('policy does not allow CPUids 1');
    expect(shrink({ bridges: [] }).message).toBe('policy allows bridges , which is not a superset of br0');
    expect(shrink({ vms: 1 }).message).toBe(
      'unikernel would exceed running unikernel limit set by policy to 1, running 2',
    );
    expect(shrink({ memory: 59 }).message).toBe(
      'unikernel would exceed running memory limit set by policy to 59 MB, used 60 MB',
    );
    expect(shrink({ block: 7 }).message).toBe(
      'unikernel would exceed running block storage limit set by policy to 7 MB, used 8 MB',
    );
    expect(shrink({ block: null }).message).toBe(
      'unikernel would exceed running block storage limit set by policy to 0 MB, used 8 MB',
    );
  });

  it('removes a policy unconditionally; unknown paths are refused', () => {
    const running = unwrap(admitUnikernel(withP1, name('alpha:vm'), vm()));
    const removed = unwrap(removePolicy(running, path('alpha')));
    expect(findPolicy(removed, path('alpha'))).toBeUndefined();
    expect(findUnikernel(removed, name('alpha:vm'))).toBeDefined();
    expect(refused(removePolicy(removed, path('alpha')))).toEqual({
      code: 'E_POLICY_NOT_FOUND',
      message: 'unknown policy',
    });
    expect(unwrap(removePolicy(withP1, path('alpha')))).toEqual(emptyTree);
  });
});

describe('shared budgets (Petrel (a))', () => {
  const a = policy({ vms: 2, memory: 100 });
  let tree: Tree = unwrap(addPolicy(emptyTree, path('a'), a));
  tree = unwrap(addPolicy(tree, path('a:b'), a));
  tree = unwrap(addPolicy(tree, path('a:c'), a));

  it('refuses the third VM anywhere under a, naming the ancestor', () => {
    let t = unwrap(admitUnikernel(tree, name('a:b:one'), vm()));
    t = unwrap(admitUnikernel(t, name('a:c:two'), vm()));
    expect(refused(admitUnikernel(t, name('a:c:three'), vm()))).toEqual({
      code: 'E_POLICY_VMS',
      message: 'maximum amount of unikernels (2) reached (policy of a:)',
    });
    expect(refused(admitUnikernel(t, name('a:direct'), vm())).message).toBe(
      'maximum amount of unikernels (2) reached',
    );
  });

  it('checks the root policy at admission (the host)', () => {
    const host = unwrap(addPolicy(tree, path(''), policy({ vms: 100, memory: 15 })));
    expect(refused(admitUnikernel(host, name('a:b:big'), vm({ memory: 16 })))).toEqual({
      code: 'E_POLICY_MEMORY',
      message: 'maximum allowed memory (15, used 0) would be exceeded (requesting 16) (policy of :)',
    });
  });

  it('applies to block storage too', () => {
    let t = unwrap(addPolicy(emptyTree, path('a'), policy({ block: 10 })));
    t = unwrap(addPolicy(t, path('a:b'), policy({ block: 10 })));
    t = unwrap(addBlock(t, name('a:x'), 6));
    expect(refused(addBlock(t, name('a:b:y'), 6)).message).toBe(
      'block device policy limit of 10 MB (used 6 MB) would be exceeded by the request (6 MB) (policy of a:)',
    );
  });
});

describe('listings', () => {
  const p = policy();
  let tree: Tree = emptyTree;
  for (const at of ['', 'a', 'a:x', 'b'])
    tree = unwrap(addPolicy(tree, path(at), policy({ vms: 9, memory: 99, block: 10 })));
  for (const at of ['a:web', 'a:x:web', 'b:z', ':a', 'a:x:a'])
    tree = unwrap(admitUnikernel(tree, name(at), vm({ memory: 1 })));

  it('policies: the node before its descendants, siblings in descending order', () => {
    expect(foldPolicies(tree, path('')).map(([n]) => printName(n))).toEqual([':', 'b:', 'a:', 'a:x:']);
    expect(foldPolicies(tree, path('a')).map(([n]) => printName(n))).toEqual([':', 'x:']);
    expect(p.vms).toBe(1n);
  });

  it('unikernels: relative to the queried path, entries before the subtree of the same label', () => {
    // `:a` sits where Albatross' trie keeps it: at node a, before everything under a:.
    expect(foldUnikernels(tree, path('')).map(([n]) => printName(n))).toEqual([
      'b:z',
      ':a',
      'a:x:web',
      'a:x:a',
      'a:web',
    ]);
    expect(foldUnikernels(tree, path('a')).map(([n]) => printName(n))).toEqual(['x:web', 'x:a', ':web']);
    expect(foldUnikernels(tree, path('nowhere'))).toEqual([]);
  });

  it('blocks and collect', () => {
    const withDisks = unwrap(addBlock(unwrap(addBlock(tree, name('a:d1'), 1)), name('b:d2'), 1));
    expect(foldBlocks(withDisks, path('')).map(([n]) => printName(n))).toEqual(['b:d2', 'a:d1']);
    expect(collect(tree, path('a:x:deeper')).map((c) => c.path.join(':'))).toEqual(['a:x', 'a', '']);
  });
});
