// The pure placement function against a naive model of "this node can run this workload":
// a chosen node serves the runtime and satisfies every predicate net of reservations (and is the
// best by the choice rule), a failure means no node did, and the SQL prefilter document never
// excludes a qualifying node.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { containmentFor, type NodeRow, place, type Requirements } from '../src/fleet/placement.js';

const RUNS = Number(process.env.PROPERTY_RUNS ?? 1000);
const NOW = new Date('2026-01-01T12:00:00Z');
const FRESH_MS = 30_000;
const BRIDGES = ['service', 'storage', 'mgmt'];

// Values come from small sets so that capable nodes, ties and near misses are common.
const abi = fc.integer({ min: 1, max: 2 });
const mib = fc.constantFrom(0, 256, 1024, 4096);

// Well-formed entries mostly, malformed ones sometimes: the stored JSON is an input edge.
const tender = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constantFrom('hvt', 'spt'),
      path: fc.constant('/t'),
      version: fc.constant('v'),
      abi,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constantFrom('hvt', 'virtio', 1), abi: fc.oneof(abi, fc.constant('2')) }),
  },
);
const bridge = fc.oneof(
  { weight: 6, arbitrary: fc.record({ name: fc.constantFrom(...BRIDGES), up: fc.boolean() }) },
  {
    weight: 1,
    arbitrary: fc.oneof(fc.constantFrom(...BRIDGES), fc.record({ name: fc.constantFrom(...BRIDGES) })),
  },
);
/** Mostly true: absent, false and mistyped values are the interesting minority. */
const flag = fc.oneof(
  { weight: 6, arbitrary: fc.constant(true) },
  { weight: 2, arbitrary: fc.constant(false) },
  { weight: 1, arbitrary: fc.constantFrom('true', 1, null) },
);
const served = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constantFrom('hvt', 'spt'), abi }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constantFrom('hvt', 'virtio', 1), abi: fc.oneof(abi, fc.constant('2')) }),
  },
);
const runtimes = fc.oneof(
  { weight: 6, arbitrary: fc.subarray(['hvt', 'spt']) },
  { weight: 1, arbitrary: fc.constantFrom(null, 'hvt', ['kvm'], ['hvt', 3]) },
);
const capabilities = fc.oneof(
  {
    weight: 10,
    arbitrary: fc.record(
      {
        kvm: flag,
        tenders: fc.array(tender, { maxLength: 4 }),
        tun: flag,
        bridges: fc.array(bridge, { maxLength: 4 }),
        netAdmin: flag,
        runtimes,
        serves: fc.array(served, { maxLength: 3 }),
      },
      { requiredKeys: ['kvm', 'tenders', 'bridges', 'serves'] },
    ),
  },
  { weight: 1, arbitrary: fc.constantFrom({}, [], null, 'kvm') },
);
const resources = fc.oneof(
  {
    weight: 10,
    arbitrary: fc.record({
      cpus: fc.integer({ min: 0, max: 3 }),
      memoryMiB: mib,
      vms: fc.constantFrom(0, 1, 2, Number.MAX_SAFE_INTEGER),
      blockStorageMiB: mib,
    }),
  },
  { weight: 1, arbitrary: fc.constantFrom({}, { memoryMiB: '4096', cpus: 2 }, { memoryMiB: 1.5, cpus: -1 }) },
);
const reserved = fc.option(
  fc.record({ memoryMiB: fc.constantFrom(0, 256, 1024), vms: fc.integer({ min: 0, max: 2 }) }),
  {
    nil: undefined,
  },
);
const id = fc.stringMatching(/^[a-zA-Z0-9][a-z0-9.-]{0,5}$/);
const rows: fc.Arbitrary<NodeRow[]> = fc.uniqueArray(
  fc
    .record({
      id,
      address: fc.constant('h:1'),
      lastSeen: fc.integer({ min: -5_000, max: 40_000 }).map((age) => new Date(NOW.getTime() - age)),
      capabilities,
      resources,
      reserved,
    })
    .map(({ reserved: r, ...row }) => (r === undefined ? row : { ...row, reserved: r })),
  { selector: (r) => r.id, maxLength: 8 },
);
const vmName = fc.constantFrom('', 'web', 'user:db', 'alice:x1');
const requirements: fc.Arbitrary<Requirements> = fc.record({
  runtime: fc.constantFrom('hvt', 'spt'),
  abi,
  bridges: fc.uniqueArray(fc.constantFrom(...BRIDGES), { maxLength: 2 }),
  memoryMiB: mib,
  cpus: fc.integer({ min: 0, max: 2 }),
});

// ---- the model: written from the issue, sharing no code with src/fleet ----

const obj = (v: unknown): Record<string, unknown> | null =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
const num = (v: unknown) => (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : 0);

/** Free minus reserved, as the issue defines what a placement can have. */
function available(row: NodeRow): { memory: number; vms: number } {
  const res = obj(row.resources) ?? {};
  return {
    memory: Math.max(0, num(res.memoryMiB) - (row.reserved?.memoryMiB ?? 0)),
    vms: Math.max(0, num(res.vms) - (row.reserved?.vms ?? 0)),
  };
}

function satisfies(row: NodeRow, req: Requirements): boolean {
  if (NOW.getTime() - row.lastSeen.getTime() > FRESH_MS) return false;
  const caps = obj(row.capabilities) ?? {};
  const res = obj(row.resources) ?? {};
  const list = (v: unknown) => (Array.isArray(v) ? v.map(obj).filter((x) => x !== null) : []);
  // It serves the runtime: configured in --runtimes AND found usable at the image's ABI. What the
  // probe found (tenders, kvm) beyond that never qualifies a node.
  if (!(Array.isArray(caps.runtimes) && caps.runtimes.includes(req.runtime))) return false;
  if (!list(caps.serves).some((s) => s.kind === req.runtime && s.abi === req.abi)) return false;
  if (req.bridges.length > 0 && !(caps.tun === true && caps.netAdmin === true)) return false;
  const up = new Set(
    list(caps.bridges)
      .filter((b) => b.up === true && typeof b.name === 'string')
      .map((b) => b.name),
  );
  if (!req.bridges.every((b) => up.has(b))) return false;
  const room = available(row);
  return room.memory >= req.memoryMiB && room.vms >= 1 && num(res.cpus) >= req.cpus;
}

/** FNV-1a over UTF-8, 31 bits: the spread key the tie rule hashes names with. */
function fnv31(text: string): number {
  let h = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) h = Math.imul(h ^ byte, 0x01000193);
  return (h >>> 1) & 0x7fffffff;
}

/** jsonb `@>` for the JSON values the registry stores. */
function contains(a: unknown, b: unknown): boolean {
  if (Array.isArray(b)) return Array.isArray(a) && b.every((y) => a.some((x) => contains(x, y)));
  const ob = obj(b);
  if (ob !== null) {
    const oa = obj(a);
    return oa !== null && Object.entries(ob).every(([k, v]) => k in oa && contains(oa[k], v));
  }
  return a === b;
}

const memory = (r: NodeRow) => available(r).memory;

describe('placement', () => {
  it('the chosen node satisfies every predicate and is the best by the choice rule; a failure means none did', () => {
    fc.assert(
      fc.property(rows, requirements, vmName, (nodes, req, vm) => {
        const capable = nodes.filter((r) => satisfies(r, req));
        const placed = place(nodes, req, { now: NOW, freshMs: FRESH_MS, vm });
        if (placed.ok) {
          const chosen = nodes.find((r) => r.id === placed.value.node);
          expect(chosen && satisfies(chosen, req)).toBe(true);
          const best = Math.max(...capable.map(memory));
          // Ties: the smallest hash of the node id XOR the hash of the unikernel's name, then id.
          const tie = (id: string) => (fnv31(id) ^ fnv31(vm)) >>> 0;
          const ties = capable
            .filter((r) => memory(r) === best)
            .map((r) => r.id)
            .sort((a, b) => tie(a) - tie(b) || (a < b ? -1 : a > b ? 1 : 0));
          expect(placed.value.node).toBe(ties[0]);
          expect(placed.value.memoryAfterMiB).toBe(best - req.memoryMiB);
        } else {
          expect(capable).toEqual([]);
          expect(placed.error.code).toBe('E_FLEET_NO_CAPABLE_NODE');
          const reasons = placed.error.details?.reasons as Record<string, string[]>;
          expect(Object.keys(reasons).sort()).toEqual(nodes.map((r) => r.id).sort());
          for (const r of nodes) expect(reasons[r.id]?.length).toBeGreaterThan(0);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('an explicit node is placed on exactly when it satisfies every predicate', () => {
    fc.assert(
      fc.property(rows, requirements, fc.nat(), (nodes, req, pick) => {
        const requested = nodes[pick % Math.max(1, nodes.length)]?.id ?? 'absent';
        const placed = place(nodes, req, { now: NOW, freshMs: FRESH_MS, node: requested, vm: 'web' });
        const row = nodes.find((r) => r.id === requested);
        expect(placed.ok).toBe(row !== undefined && satisfies(row, req));
        if (placed.ok) expect(placed.value.node).toBe(requested);
      }),
      { numRuns: RUNS },
    );
  });

  it('a node that refused the create never qualifies again', () => {
    fc.assert(
      fc.property(rows, requirements, fc.nat(), (nodes, req, pick) => {
        const refusedId = nodes[pick % Math.max(1, nodes.length)]?.id ?? 'absent';
        const refused = new Map([[refusedId, 'no']]);
        const placed = place(nodes, req, { now: NOW, freshMs: FRESH_MS, refused });
        if (placed.ok) expect(placed.value.node).not.toBe(refusedId);
        const others = nodes.filter((r) => r.id !== refusedId && satisfies(r, req));
        expect(placed.ok).toBe(others.length > 0);
      }),
      { numRuns: RUNS },
    );
  });

  it('every capable node contains the SQL prefilter document', () => {
    fc.assert(
      fc.property(rows, requirements, (nodes, req) => {
        for (const r of nodes.filter((n) => satisfies(n, req))) {
          expect(contains(r.capabilities, containmentFor(req))).toBe(true);
        }
      }),
      { numRuns: RUNS },
    );
  });
});
