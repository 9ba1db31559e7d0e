// The fleet's reconciliation over random fleets and random sequences of rounds (nodes lost and
// coming back, deployments added, scaled, removed and expired, capacity changing, replicas
// exiting or refused): after each round's actions are applied, a deployment's replicas are on
// distinct nodes, no node got more than its reported room minus reservations, nothing is placing
// or running on a lost node, generations only grow, and waiting, exited, refused and expired
// replicas did not move. The same input, in any order, gives the same actions.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { TenderKind } from '../src/fleet/capabilities.js';
import type { Assignment, ReplicaKey } from '../src/fleet/deployment.js';
import type { NodeRow, Reserved } from '../src/fleet/placement.js';
import {
  type FleetAction,
  type FleetInput,
  planFleet,
  type StoredDeployment,
} from '../src/fleet/reconcile.js';
import { report, row } from '../test/fleet/fixtures.js';

const RUNS = Number(process.env.PROPERTY_RUNS ?? 300);
const NOW = new Date('2026-01-01T12:00:00Z');
const LOST_AFTER = 30_000;
const NODE_IDS = ['n0', 'n1', 'n2', 'n3'];
/** Deployments may be pinned to these; n4 never registers. */
const PINS = [...NODE_IDS, 'n4'];
const NAMES = ['a:web', 'a:db', 'b:x', 'b:y'];

// ---- the world the rounds change ----

interface SimNode {
  registered: boolean;
  lost: boolean;
  runtimes: TenderKind[];
  memoryMiB: number;
  vms: number;
}

interface World {
  readonly nodes: Map<string, SimNode>;
  readonly deployments: Map<string, StoredDeployment>;
  assignments: Assignment[];
}

type Spec = {
  name: string;
  replicas: number;
  runtime: TenderKind;
  memoryMiB: number;
  blockDevices: number;
  node: string | null;
};

type Event =
  | { kind: 'lose' | 'revive'; node: string }
  | { kind: 'capacity'; node: string; memoryMiB: number; vms: number }
  | { kind: 'add'; spec: Spec }
  | { kind: 'remove' | 'expire'; name: string }
  | { kind: 'exit' | 'refuse'; pick: number };

interface Round {
  readonly events: Event[];
  /** Extra reservations per node this round. */
  readonly reserved: (Reserved | null)[];
}

const memory = fc.constantFrom(0, 512, 1024, 2048, 4096);
const node = fc.constantFrom(...NODE_IDS);
const simNode: fc.Arbitrary<SimNode> = fc.record({
  registered: fc.boolean(),
  lost: fc.boolean(),
  runtimes: fc.constantFrom<TenderKind[]>(['hvt', 'spt'], ['hvt'], ['spt']),
  memoryMiB: memory,
  vms: fc.integer({ min: 0, max: 3 }),
});
const spec: fc.Arbitrary<Spec> = fc.record({
  name: fc.constantFrom(...NAMES),
  replicas: fc.integer({ min: 1, max: 3 }),
  runtime: fc.constantFrom<TenderKind>('hvt', 'spt'),
  memoryMiB: fc.constantFrom(64, 256, 1024),
  blockDevices: fc.constantFrom(0, 0, 0, 1),
  node: fc.oneof(
    { weight: 4, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: fc.constantFrom(...PINS) },
  ),
});
const event: fc.Arbitrary<Event> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constantFrom('lose' as const, 'revive' as const), node }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('capacity' as const),
      node,
      memoryMiB: memory,
      vms: fc.integer({ min: 0, max: 3 }),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('add' as const), spec }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constantFrom('remove' as const, 'expire' as const),
      name: fc.constantFrom(...NAMES),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constantFrom('exit' as const, 'refuse' as const), pick: fc.nat() }),
  },
);
const reserved = fc.option(
  fc.record({ memoryMiB: fc.constantFrom(0, 256, 1024), vms: fc.integer({ min: 0, max: 1 }) }),
  {
    nil: null,
  },
);
const round: fc.Arbitrary<Round> = fc.record({
  events: fc.array(event, { maxLength: 4 }),
  reserved: fc.array(reserved, { minLength: NODE_IDS.length, maxLength: NODE_IDS.length }),
});
const fleet = fc.record({
  nodes: fc.array(simNode, { minLength: NODE_IDS.length, maxLength: NODE_IDS.length }),
  specs: fc.array(spec, { maxLength: 3 }),
  rounds: fc.array(round, { minLength: 1, maxLength: 8 }),
});

function deploymentOf(s: Spec, proof: StoredDeployment['proof'] = 'valid'): StoredDeployment {
  return {
    request: {
      name: s.name,
      replicas: s.replicas,
      image: { sha256: '0'.repeat(64), size: 1 },
      command: new Uint8Array(),
      requirements: { runtime: s.runtime, abi: 2, bridges: [], memoryMiB: s.memoryMiB, cpus: 1 },
      blockDevices: s.blockDevices,
      node: s.node,
    },
    proof,
  };
}

function happen(world: World, e: Event): void {
  switch (e.kind) {
    case 'lose':
    case 'revive': {
      const n = world.nodes.get(e.node) as SimNode;
      n.lost = e.kind === 'lose';
      if (e.kind === 'revive') n.registered = true;
      return;
    }
    case 'capacity': {
      const n = world.nodes.get(e.node) as SimNode;
      n.memoryMiB = e.memoryMiB;
      n.vms = e.vms;
      return;
    }
    case 'add':
      world.deployments.set(e.spec.name, deploymentOf(e.spec));
      return;
    case 'remove':
      world.deployments.delete(e.name);
      return;
    case 'expire': {
      const d = world.deployments.get(e.name);
      if (d !== undefined) world.deployments.set(e.name, { ...d, proof: 'expired' });
      return;
    }
    case 'exit':
    case 'refuse': {
      const i = e.pick % Math.max(1, world.assignments.length);
      const a = world.assignments[i];
      if (a === undefined || a.state !== 'running') return;
      world.assignments[i] = { ...a, state: e.kind === 'exit' ? 'exited' : 'refused' };
      return;
    }
  }
}

/** What each node holds, as if it had reported at once: placing, running and waiting replicas. */
function used(world: World, id: string): { memoryMiB: number; vms: number } {
  let memoryMiB = 0;
  let vms = 0;
  for (const a of world.assignments) {
    if (a.node !== id || !['placing', 'running', 'waiting'].includes(a.state)) continue;
    memoryMiB += world.deployments.get(a.name)?.request.requirements.memoryMiB ?? 0;
    vms += 1;
  }
  return { memoryMiB, vms };
}

function inputOf(world: World, r: Round): FleetInput {
  const nodes: NodeRow[] = [];
  const reservations = new Map<string, Reserved>();
  NODE_IDS.forEach((id, i) => {
    const n = world.nodes.get(id) as SimNode;
    if (!n.registered) return;
    const u = used(world, id);
    const base = row(id, report({ runtimes: n.runtimes }), n.lost ? 2 * LOST_AFTER : 1_000);
    const free = { memoryMiB: Math.max(0, n.memoryMiB - u.memoryMiB), vms: Math.max(0, n.vms - u.vms) };
    nodes.push({ ...base, resources: { ...free, cpus: 4, blockStorageMiB: 0 } });
    const held = r.reserved[i];
    if (held != null) reservations.set(id, held);
  });
  return {
    deployments: [...world.deployments.values()],
    assignments: world.assignments,
    nodes,
    reservations,
    now: NOW,
    lostAfter: LOST_AFTER,
  };
}

// ---- applying a round, as the registry would ----

const keyOf = (r: ReplicaKey) => `${r.name}#${r.index}`;

function apply(assignments: readonly Assignment[], actions: readonly FleetAction[]): Assignment[] {
  const byKey = new Map(assignments.map((a) => [keyOf(a), a]));
  for (const action of actions) {
    const k = keyOf(action.replica);
    const before = byKey.get(k);
    const base = { ...action.replica, since: NOW, generation: before?.generation ?? 0 };
    switch (action.kind) {
      case 'place':
        byKey.set(k, {
          ...base,
          node: action.node,
          generation: action.generation,
          state: 'placing',
          reason: null,
        });
        break;
      case 'unplaced':
        byKey.set(k, { ...base, node: null, state: 'unplaced', reason: JSON.stringify(action.reasons) });
        break;
      case 'wait':
        byKey.set(k, { ...base, node: action.node, state: 'waiting', reason: action.why });
        break;
      case 'expire':
        byKey.set(k, { ...base, node: before?.node ?? null, state: 'expired', reason: 'proof expired' });
        break;
      case 'retire':
        byKey.delete(k);
        break;
    }
  }
  return [...byKey.values()];
}

/** The nodes' next reports: what they were assigned runs, once they are fresh. */
function reportBack(world: World): void {
  world.assignments = world.assignments.map((a) => {
    const n = a.node === null ? undefined : world.nodes.get(a.node);
    const back = n?.registered && !n.lost;
    return back && (a.state === 'placing' || a.state === 'waiting') ? { ...a, state: 'running' } : a;
  });
}

// ---- what must hold after each round ----

function check(input: FleetInput, actions: readonly FleetAction[], after: readonly Assignment[]): void {
  const rows = new Map(input.nodes.map((n) => [n.id, n]));
  const fresh = (id: string) => {
    const n = rows.get(id);
    return n !== undefined && NOW.getTime() - n.lastSeen.getTime() <= LOST_AFTER;
  };
  const before = new Map(input.assignments.map((a) => [keyOf(a), a]));
  const requirements = new Map(input.deployments.map((d) => [d.request.name, d.request.requirements]));

  // Distinct nodes per deployment.
  const seen = new Set<string>();
  for (const a of after) {
    if (a.node === null) continue;
    const k = `${a.name} on ${a.node}`;
    expect(seen.has(k), `two replicas of ${k}`).toBe(false);
    seen.add(k);
  }

  // Room: what one round placed on a node fits its reported free figures minus reservations.
  const placed = new Map<string, { memoryMiB: number; vms: number }>();
  for (const a of actions) {
    if (a.kind !== 'place') continue;
    expect(fresh(a.node), `${keyOf(a.replica)} placed on lost or unknown ${a.node}`).toBe(true);
    const p = placed.get(a.node) ?? { memoryMiB: 0, vms: 0 };
    placed.set(a.node, {
      memoryMiB: p.memoryMiB + (requirements.get(a.replica.name)?.memoryMiB ?? 0),
      vms: p.vms + 1,
    });
    expect(a.generation, `${keyOf(a.replica)}'s generation`).toBeGreaterThan(
      before.get(keyOf(a.replica))?.generation ?? 0,
    );
  }
  for (const [id, p] of placed) {
    const free = (rows.get(id)?.resources ?? {}) as { memoryMiB: number; vms: number };
    const held = input.reservations.get(id) ?? { memoryMiB: 0, vms: 0 };
    expect(p.memoryMiB, `memory placed on ${id}`).toBeLessThanOrEqual(
      Math.max(0, free.memoryMiB - held.memoryMiB),
    );
    expect(p.vms, `unikernels placed on ${id}`).toBeLessThanOrEqual(Math.max(0, free.vms - held.vms));
  }

  // A replica with block devices or pinned, on a lost node, waits there.
  const afterByKey = new Map(after.map((a) => [keyOf(a), a]));
  const requests = new Map(input.deployments.map((d) => [d.request.name, d]));
  for (const b of input.assignments) {
    const d = requests.get(b.name);
    if (d === undefined || d.proof !== 'valid' || b.index >= d.request.replicas) continue;
    if (!(b.state === 'placing' || b.state === 'running') || b.node === null || fresh(b.node)) continue;
    if (d.request.blockDevices === 0 && d.request.node === null) continue;
    expect(afterByKey.get(keyOf(b)), `${keyOf(b)} must wait for ${b.node}`).toMatchObject({
      node: b.node,
      generation: b.generation,
      state: 'waiting',
    });
  }

  for (const a of after) {
    // Nothing placing or running on a lost node.
    if ((a.state === 'placing' || a.state === 'running') && a.node !== null) {
      expect(fresh(a.node), `${keyOf(a)} ${a.state} on lost ${a.node}`).toBe(true);
    }
    const b = before.get(keyOf(a));
    if (b === undefined) continue;
    expect(a.generation, `${keyOf(a)}'s generation`).toBeGreaterThanOrEqual(b.generation);
    // Waiting, exited, refused and expired replicas stay where they are; refused and expired stay so.
    if (['waiting', 'exited', 'refused', 'expired'].includes(b.state)) {
      expect({ node: a.node, generation: a.generation }, `${keyOf(a)} (${b.state}) moved`).toEqual({
        node: b.node,
        generation: b.generation,
      });
    }
    if (b.state === 'refused' || b.state === 'expired') expect(a.state).toBe(b.state);
  }
}

/** Plays the rounds from an empty registry: `each` sees every round's input and actions. */
function play(
  { nodes, specs, rounds }: { nodes: SimNode[]; specs: Spec[]; rounds: Round[] },
  each: (input: FleetInput, actions: FleetAction[], after: Assignment[]) => void,
): void {
  const world: World = {
    nodes: new Map(NODE_IDS.map((id, i) => [id, { ...(nodes[i] as SimNode) }])),
    deployments: new Map(specs.map((s) => [s.name, deploymentOf(s)])),
    assignments: [],
  };
  for (const r of rounds) {
    for (const e of r.events) happen(world, e);
    const input = inputOf(world, r);
    const actions = planFleet(input);
    const after = apply(world.assignments, actions);
    each(input, actions, after);
    world.assignments = after;
    reportBack(world);
  }
}

describe('planFleet over rounds', () => {
  it('keeps replicas distinct, within room, off lost nodes, generations growing, the fixed ones fixed', () => {
    fc.assert(
      fc.property(fleet, (f) => play(f, check)),
      { numRuns: RUNS },
    );
  });

  it('gives the same actions for the same input in any order', () => {
    fc.assert(
      fc.property(fleet, (f) =>
        play(f, (input, actions) => {
          const reversed = {
            ...input,
            deployments: [...input.deployments].reverse(),
            assignments: [...input.assignments].reverse(),
            nodes: [...input.nodes].reverse(),
          };
          expect(planFleet(reversed)).toEqual(actions);
        }),
      ),
      { numRuns: RUNS },
    );
  });
});
