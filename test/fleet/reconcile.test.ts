// The fleet's reconciliation by example: a lost node's replicas move unless they must wait, a
// failed placement says why per node, replicas stay on distinct nodes and one round's placements
// share the room, and a node that comes back destroys the copies the registry gave away.

import { describe, expect, it } from 'vitest';
import type { Assignment, DeploymentRequest } from '../../src/fleet/deployment.js';
import type { Requirements } from '../../src/fleet/placement.js';
import { type FleetInput, planFleet, type StoredDeployment, staleCopies } from '../../src/fleet/reconcile.js';
import { capacity, HVT, NOW, report, row } from './fixtures.js';

const LOST_AFTER = 30_000;
const LOST = 60_000;

function deployment(
  name: string,
  overrides: Partial<DeploymentRequest> = {},
  proof: StoredDeployment['proof'] = 'valid',
): StoredDeployment {
  return {
    request: {
      name,
      replicas: 1,
      image: { sha256: '0'.repeat(64), size: 1 },
      command: new Uint8Array(),
      requirements: HVT,
      blockDevices: 0,
      node: null,
      ...overrides,
    },
    proof,
  };
}

function assignment(
  name: string,
  index: number,
  node: string | null,
  generation = 1,
  state: Assignment['state'] = 'running',
): Assignment {
  return { name, index, node, generation, state, since: NOW, reason: null };
}

function input(overrides: Partial<FleetInput>): FleetInput {
  return {
    deployments: [],
    assignments: [],
    nodes: [],
    reservations: new Map(),
    now: NOW,
    lostAfter: LOST_AFTER,
    ...overrides,
  };
}

/** A row for a node with `memoryMiB` free, seen `ageMs` ago. */
function nodeWith(id: string, memoryMiB: number, ageMs = 1_000) {
  const r = report();
  return { ...row(id, r, ageMs), resources: { ...capacity(r, memoryMiB).free } };
}

describe('planFleet', () => {
  it('keeps a replica whose node is fresh, and places a new one', () => {
    const actions = planFleet(
      input({
        deployments: [deployment('alice:web', { replicas: 2 })],
        assignments: [assignment('alice:web', 0, 'a')],
        nodes: [row('a'), row('b')],
      }),
    );
    expect(actions).toEqual([
      { kind: 'place', replica: { name: 'alice:web', index: 1 }, node: 'b', generation: 1 },
    ]);
  });

  it('places again, one generation up, a replica whose node is lost', () => {
    const actions = planFleet(
      input({
        deployments: [deployment('alice:web')],
        assignments: [assignment('alice:web', 0, 'a', 3)],
        nodes: [row('a', report(), LOST), row('b')],
      }),
    );
    expect(actions).toEqual([
      { kind: 'place', replica: { name: 'alice:web', index: 0 }, node: 'b', generation: 4 },
    ]);
  });

  it('lets a replica with block devices wait for its lost node', () => {
    const nodes = [row('a', report(), LOST), row('b')];
    const actions = planFleet(
      input({
        deployments: [deployment('alice:db', { blockDevices: 1 })],
        assignments: [assignment('alice:db', 0, 'a')],
        nodes,
      }),
    );
    expect(actions).toEqual([
      { kind: 'wait', replica: { name: 'alice:db', index: 0 }, node: 'a', why: 'block devices' },
    ]);
    // Once waiting, it stays so without a further action, and keeps its node when that comes back.
    const waiting = [assignment('alice:db', 0, 'a', 1, 'waiting')];
    const deployments = [deployment('alice:db', { blockDevices: 1 })];
    expect(planFleet(input({ deployments, assignments: waiting, nodes }))).toEqual([]);
    expect(planFleet(input({ deployments, assignments: waiting, nodes: [row('a'), row('b')] }))).toEqual([]);
    // Its request changed since (no block devices now): it still waits for its node.
    expect(planFleet(input({ deployments: [deployment('alice:db')], assignments: waiting, nodes }))).toEqual(
      [],
    );
  });

  it('lets a pinned replica wait for its lost node', () => {
    const actions = planFleet(
      input({
        deployments: [deployment('alice:web', { node: 'a' })],
        assignments: [assignment('alice:web', 0, 'a')],
        nodes: [row('a', report(), LOST), row('b')],
      }),
    );
    expect(actions).toEqual([
      { kind: 'wait', replica: { name: 'alice:web', index: 0 }, node: 'a', why: 'pinned' },
    ]);
  });

  it('says why per node when no node qualifies, and places once one does', () => {
    const big: Requirements = { ...HVT, memoryMiB: 8192 };
    const deployments = [deployment('alice:big', { requirements: big })];
    const actions = planFleet(
      input({
        deployments,
        nodes: [row('a', report(), LOST), row('b'), row('c', report({ runtimes: ['spt'] }))],
      }),
    );
    expect(actions).toHaveLength(1);
    const [unplaced] = actions;
    expect(unplaced?.kind).toBe('unplaced');
    if (unplaced?.kind !== 'unplaced') return;
    expect(Object.keys(unplaced.reasons)).toEqual(['a', 'b', 'c']);
    expect(unplaced.reasons.a?.some((r) => r.startsWith('stale'))).toBe(true);
    expect(unplaced.reasons.b).toEqual(['not enough memory (free 4096 MiB, need 8192 MiB)']);
    expect(unplaced.reasons.c?.some((r) => r.startsWith('does not run hvt'))).toBe(true);
    // Retried each round: a node with room appears.
    const unplacedBefore = [assignment('alice:big', 0, null, 0, 'unplaced')];
    const again = planFleet(
      input({ deployments, assignments: unplacedBefore, nodes: [row('b'), nodeWith('d', 16_384)] }),
    );
    expect(again).toEqual([
      { kind: 'place', replica: { name: 'alice:big', index: 0 }, node: 'd', generation: 1 },
    ]);
  });

  it('says why a pinned replica cannot be placed on its node', () => {
    const actions = planFleet(
      input({ deployments: [deployment('alice:web', { node: 'z' })], nodes: [row('a')] }),
    );
    expect(actions).toEqual([
      {
        kind: 'unplaced',
        replica: { name: 'alice:web', index: 0 },
        reasons: { z: ['node z is not registered'] },
      },
    ]);
  });

  it('puts two replicas on two of three nodes, and a lost one on the third', () => {
    const deployments = [deployment('alice:web', { replicas: 2 })];
    const nodes = [row('a'), row('b'), row('c')];
    const first = planFleet(input({ deployments, nodes }));
    const placed = first.flatMap((a) => (a.kind === 'place' ? [a.node] : []));
    expect(placed).toHaveLength(2);
    expect(new Set(placed).size).toBe(2);
    const [n0 = '', n1 = ''] = placed;
    const third = ['a', 'b', 'c'].find((n) => !placed.includes(n));
    const lost = nodes.map((n) => (n.id === n0 ? row(n0, report(), LOST) : n));
    const second = planFleet(
      input({
        deployments,
        nodes: lost,
        assignments: [assignment('alice:web', 0, n0), assignment('alice:web', 1, n1)],
      }),
    );
    expect(second).toEqual([
      { kind: 'place', replica: { name: 'alice:web', index: 0 }, node: third, generation: 2 },
    ]);
  });

  it('never puts two replicas on one node: the holder is excluded with its reason', () => {
    const actions = planFleet(
      input({
        deployments: [deployment('alice:web', { replicas: 2 })],
        assignments: [assignment('alice:web', 0, 'a')],
        nodes: [row('a')],
      }),
    );
    expect(actions).toEqual([
      {
        kind: 'unplaced',
        replica: { name: 'alice:web', index: 1 },
        reasons: { a: ['holds replica 0 of alice:web'] },
      },
    ]);
  });

  it('counts one round’s placements against each other’s room, and the reservations', () => {
    const half: Requirements = { ...HVT, memoryMiB: 2048 };
    const actions = planFleet(
      input({
        deployments: [
          deployment('a:one', { requirements: half }),
          deployment('a:two', { requirements: half }),
          deployment('a:three', { requirements: half }),
        ],
        // 4096 MiB free, 1024 of it reserved: room for one of them, not two.
        nodes: [row('n')],
        reservations: new Map([['n', { memoryMiB: 1024, vms: 1 }]]),
      }),
    );
    expect(actions.map((a) => a.kind)).toEqual(['place', 'unplaced', 'unplaced']);
    const [, second] = actions;
    expect(second?.kind === 'unplaced' && second.reasons.n).toEqual([
      'not enough memory (free 1024 MiB, 3072 MiB reserved, need 2048 MiB)',
    ]);
  });

  it('leaves exited, refused and expired replicas alone, and expires the replicas of an expired proof', () => {
    const nodes = [row('a', report(), LOST), row('b')];
    const assignments = [
      assignment('a:x', 0, 'a', 1, 'exited'),
      assignment('a:x', 1, 'a', 1, 'refused'),
      assignment('a:x', 2, 'a', 1, 'expired'),
    ];
    expect(
      planFleet(input({ deployments: [deployment('a:x', { replicas: 3 })], assignments, nodes })),
    ).toEqual([]);
    const expired = planFleet(
      input({
        deployments: [deployment('a:y', { replicas: 2 }, 'expired')],
        assignments: [assignment('a:y', 0, 'b')],
        nodes,
      }),
    );
    expect(expired).toEqual([
      { kind: 'expire', replica: { name: 'a:y', index: 0 } },
      { kind: 'expire', replica: { name: 'a:y', index: 1 } },
    ]);
  });

  it('retires replicas beyond a scale-down and those of a removed deployment', () => {
    const actions = planFleet(
      input({
        deployments: [deployment('a:web')],
        assignments: [assignment('a:web', 0, 'a'), assignment('a:web', 1, 'b'), assignment('a:gone', 0, 'a')],
        nodes: [row('a'), row('b')],
      }),
    );
    expect(actions).toEqual([
      { kind: 'retire', replica: { name: 'a:gone', index: 0 } },
      { kind: 'retire', replica: { name: 'a:web', index: 1 } },
    ]);
  });

  it('gives the same actions for the same input, whatever the order of its lists', () => {
    const deployments = [deployment('b:x', { replicas: 2 }), deployment('a:x', { replicas: 2 })];
    const nodes = [row('c'), row('a'), row('b')];
    const once = planFleet(input({ deployments, nodes }));
    expect(
      planFleet(input({ deployments: [...deployments].reverse(), nodes: [...nodes].reverse() })),
    ).toEqual(once);
  });
});

describe('staleCopies', () => {
  const assignments = [
    assignment('a:web', 0, 'n1', 2),
    assignment('a:web', 1, 'n2', 5),
    assignment('a:db', 0, null, 3, 'unplaced'),
    assignment('a:old', 0, 'n1', 1, 'expired'),
  ];

  it('keeps what is still assigned to the node at its generation', () => {
    expect(staleCopies('n1', [{ name: 'a:web', index: 0, generation: 2 }], assignments)).toEqual([]);
  });

  it('destroys copies assigned elsewhere, to no node, at a higher generation, removed or expired', () => {
    const runs = [
      { name: 'a:web', index: 0, generation: 1 },
      { name: 'a:web', index: 1, generation: 5 },
      { name: 'a:db', index: 0, generation: 3 },
      { name: 'a:gone', index: 0, generation: 1 },
      { name: 'a:old', index: 0, generation: 1 },
    ];
    expect(staleCopies('n1', runs, assignments)).toEqual(runs);
  });
});
