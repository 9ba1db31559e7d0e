// Placement, pure: a workload's requirements become predicates, every node row gets a verdict
// (the reasons it cannot run the workload), and one qualifying node is chosen or the placement
// fails with one line per node. The registry's SQL prefilter is derived from the same predicates.
//
// What must stay true:
//   1. A node qualifies only if it was seen within the freshness window AND satisfies every
//      predicate. Capabilities absent from its report are false (capabilities.ts), so a node
//      that never reported (`'{}'`) qualifies for nothing.
//   2. A node qualifies for a runtime only if it SERVES it (its `--runtimes`, found usable by its
//      probe) at the image's ABI version; what the probe found beyond that does not count.
//   3. Capacity is what the node reported free minus what placements hold on it that its report
//      does not show yet (reservations), each counted once.
//   4. Choice rule (spread): the most free memory after the placement; ties broken by a hash of
//      the unikernel's name and the node's id (`spreadKey`), so equal nodes take turns instead
//      of the smallest id taking everything; the id last.
//   5. An explicit node is a request: chosen only if it qualifies, refused with its reasons
//      otherwise; never replaced by another node.
//   6. `containmentFor(req)` is implied by the capability predicates, so the SQL prefilter
//      (`capabilities @> containment`) never drops a node that qualifies.

import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import {
  type FreeResources,
  readCapabilities,
  readResources,
  type ServedRuntime,
  type StoredCapabilities,
  type TenderKind,
} from './capabilities.js';

/** What placements hold on a node beyond its last report. */
export interface Reserved {
  readonly memoryMiB: number;
  /** How many reservations (each one unikernel). */
  readonly vms: number;
}

export const NOTHING_RESERVED: Reserved = Object.freeze({ memoryMiB: 0, vms: 0 });

/** One row of the `nodes` table, as the registry reads it. */
export interface NodeRow {
  readonly id: string;
  readonly address: string;
  readonly lastSeen: Date;
  /** The `capabilities` column, unvalidated. */
  readonly capabilities: unknown;
  /** The `resources` column (free resources), unvalidated. */
  readonly resources: unknown;
  /** Live reservations not yet in the node's report. Default none. */
  readonly reserved?: Reserved;
  /** The `spread` column, `spreadKey(id)`; computed from the id when absent. */
  readonly spread?: number;
  /** How many unikernels its report lists (display only). */
  readonly running?: number;
}

/** What a unikernel needs from the node it runs on. */
export interface Requirements {
  /** The tender its ABI note asks for. */
  readonly runtime: TenderKind;
  /** The ABI version of its ABI note; the node must serve exactly this version. */
  readonly abi: number;
  /** Bridges its networks attach to. */
  readonly bridges: readonly string[];
  readonly memoryMiB: number;
  readonly cpus: number;
}

export type Predicate =
  | { readonly kind: 'serves'; readonly runtime: TenderKind; readonly abi: number }
  | { readonly kind: 'taps' }
  | { readonly kind: 'bridge'; readonly name: string }
  | { readonly kind: 'memory'; readonly mib: number }
  | { readonly kind: 'vms' }
  | { readonly kind: 'cpus'; readonly count: number };

export interface PlacementOptions {
  /** The clock: the database's `now()` when the rows came from the registry. */
  readonly now: Date;
  /** Nodes last seen longer ago than this do not qualify. */
  readonly freshMs: number;
  /** `--node ID`: place only there, if it qualifies. */
  readonly node?: string;
  /** The unikernel's name: the tie-break key (default ''). */
  readonly vm?: string;
  /** Nodes that already refused this create, with what they said: they do not qualify again. */
  readonly refused?: ReadonlyMap<string, string>;
  /** Nodes that may not take it, with why (a node holding another replica of its deployment). */
  readonly excluded?: ReadonlyMap<string, string>;
}

export interface NodeVerdict {
  readonly id: string;
  readonly address: string;
  readonly ageMs: number;
  /** `--runtimes` as reported; null when the report says nothing. */
  readonly runtimes: readonly TenderKind[] | null;
  readonly serves: readonly ServedRuntime[];
  /** Free as the node reported it. */
  readonly free: FreeResources;
  readonly reserved: Reserved;
  /** Free minus reserved: what this placement can have. */
  readonly available: FreeResources;
  /** Why the node cannot run the workload; empty when it qualifies. */
  readonly reasons: readonly string[];
}

export interface Placement {
  readonly node: string;
  readonly address: string;
  /** Free minus reserved before this placement. */
  readonly available: FreeResources;
  /** Free memory left after it (the choice rule's figure). */
  readonly memoryAfterMiB: number;
}

export type PlacementError = PetrelError<
  'E_FLEET_NO_CAPABLE_NODE' | 'E_FLEET_NODE_REFUSED' | 'E_FLEET_NODE_UNKNOWN' | 'E_FLEET_REQUIREMENTS'
>;

/** The default freshness window (`--fleet-fresh`): three missed 10 s heartbeats. */
export const DEFAULT_FRESH_MS = 30_000;

/** Checks and freezes requirements coming from a command line or a request. */
export function makeRequirements(input: Requirements): Result<Requirements, PlacementError> {
  const bad = (what: string) => err('E_FLEET_REQUIREMENTS', `invalid requirements: ${what}`);
  if (input.runtime !== 'hvt' && input.runtime !== 'spt') return bad(`unknown runtime ${input.runtime}`);
  for (const [field, value] of [
    ['abi', input.abi],
    ['memoryMiB', input.memoryMiB],
    ['cpus', input.cpus],
  ] as const) {
    if (!Number.isSafeInteger(value) || value < 0) return bad(`${field} must be a non-negative integer`);
  }
  if (input.bridges.some((b) => b === '')) return bad('empty bridge name');
  const bridges = [...new Set(input.bridges)].sort();
  return ok(Object.freeze({ ...input, bridges: Object.freeze(bridges) }));
}

/** The runtime served at the image's ABI; networks ⇒ taps and each bridge; then free memory, a
 * unikernel slot and enough CPU ids. */
export function predicatesFor(req: Requirements): Predicate[] {
  const predicates: Predicate[] = [{ kind: 'serves', runtime: req.runtime, abi: req.abi }];
  if (req.bridges.length > 0) predicates.push({ kind: 'taps' });
  for (const name of req.bridges) predicates.push({ kind: 'bridge', name });
  predicates.push({ kind: 'memory', mib: req.memoryMiB }, { kind: 'vms' }, { kind: 'cpus', count: req.cpus });
  return predicates;
}

/** Why the node does not serve `runtime` at `abi`, or null when it does. */
function servesReason(caps: StoredCapabilities, runtime: TenderKind, abi: number): string | null {
  const { runtimes } = caps;
  if (runtimes === null) return 'serves no runtime (its report is empty: it stopped, or its probe failed)';
  if (runtimes.length === 0) return 'hosts no unikernels (--runtimes none)';
  if (!runtimes.includes(runtime)) {
    return `does not run ${runtime} unikernels (--runtimes ${runtimes.join(',')})`;
  }
  const versions = caps.serves.filter((s) => s.kind === runtime).map((s) => s.abi);
  if (versions.includes(abi)) return null;
  if (versions.length > 0) {
    const has = [...new Set(versions)].sort((a, b) => a - b).join(', ');
    return `serves ${runtime} with ABI version ${has}, not ${abi}`;
  }
  // Configured, but the latest probe found it unusable.
  const why = runtime === 'hvt' && !caps.kvm ? 'no kvm' : `no ${runtime} tender`;
  return `does not serve ${runtime} now (--runtimes ${runtimes.join(',')}, but the probe found ${why})`;
}

/** Why `predicate` fails on a node, or null when it holds. `free` is already net of reservations. */
export function check(
  predicate: Predicate,
  caps: StoredCapabilities,
  free: FreeResources,
  reserved: Reserved = NOTHING_RESERVED,
): string | null {
  const held = (what: string) => (what === '' ? '' : `, ${what} reserved`);
  switch (predicate.kind) {
    case 'serves':
      return servesReason(caps, predicate.runtime, predicate.abi);
    case 'taps':
      if (!caps.tun) return 'no tun';
      return caps.netAdmin ? null : 'no net admin (cannot create taps)';
    case 'bridge': {
      // Any entry that is up will do, as in the SQL containment (a checked report has one).
      const named = caps.bridges.filter((b) => b.name === predicate.name);
      if (named.length === 0) return `no bridge ${predicate.name}`;
      return named.some((b) => b.up) ? null : `bridge ${predicate.name} is down`;
    }
    case 'memory':
      return free.memoryMiB >= predicate.mib
        ? null
        : `not enough memory (free ${free.memoryMiB} MiB${held(reserved.memoryMiB > 0 ? `${reserved.memoryMiB} MiB` : '')}, need ${predicate.mib} MiB)`;
    case 'vms':
      return free.vms >= 1
        ? null
        : `no unikernel slot left (free 0${held(reserved.vms > 0 ? String(reserved.vms) : '')})`;
    case 'cpus':
      return free.cpus >= predicate.count
        ? null
        : `not enough CPUs (has ${free.cpus}, need ${predicate.count})`;
  }
}

/** The verdict for every row, in node id order. */
export function explain(
  rows: readonly NodeRow[],
  req: Requirements,
  options: Omit<PlacementOptions, 'node'>,
): NodeVerdict[] {
  const predicates = predicatesFor(req);
  return [...rows].sort((a, b) => compareIds(a.id, b.id)).map((row) => verdict(row, predicates, options));
}

function verdict(
  row: NodeRow,
  predicates: readonly Predicate[],
  options: Omit<PlacementOptions, 'node'>,
): NodeVerdict {
  const caps = readCapabilities(row.capabilities);
  const free = readResources(row.resources);
  const reserved = row.reserved ?? NOTHING_RESERVED;
  const available: FreeResources = {
    ...free,
    memoryMiB: Math.max(0, free.memoryMiB - reserved.memoryMiB),
    vms: Math.max(0, free.vms - reserved.vms),
  };
  const ageMs = options.now.getTime() - row.lastSeen.getTime();
  const reasons: string[] = [];
  const refusal = options.refused?.get(row.id);
  if (refusal !== undefined) reasons.push(`refused this create: ${refusal}`);
  const exclusion = options.excluded?.get(row.id);
  if (exclusion !== undefined) reasons.push(exclusion);
  if (!isFresh(row, options.now, options.freshMs)) {
    reasons.push(
      `stale (last seen ${formatSeconds(ageMs)} ago, fresh window ${formatSeconds(options.freshMs)})`,
    );
  }
  for (const predicate of predicates) {
    const reason = check(predicate, caps, available, reserved);
    if (reason !== null) reasons.push(reason);
  }
  return {
    id: row.id,
    address: row.address,
    ageMs,
    runtimes: caps.runtimes,
    serves: caps.serves,
    free,
    reserved,
    available,
    reasons,
  };
}

/** Whether `row` was seen within `freshMs` of `now`: a node that was not is stale to placement
 * and lost to the fleet. A clock a little ahead of the database's (negative age) still counts. */
export function isFresh(row: Pick<NodeRow, 'lastSeen'>, now: Date, freshMs: number): boolean {
  return now.getTime() - row.lastSeen.getTime() <= freshMs;
}

/** Chooses a node for `req` among `rows`, or says for every node why it cannot. */
export function place(
  rows: readonly NodeRow[],
  req: Requirements,
  options: PlacementOptions,
): Result<Placement, PlacementError> {
  const verdicts = explain(rows, req, options);
  const what = describeRequirements(req);
  const chosen = (v: NodeVerdict): Placement => ({
    node: v.id,
    address: v.address,
    available: v.available,
    memoryAfterMiB: v.available.memoryMiB - req.memoryMiB,
  });
  if (options.node !== undefined) {
    const requested = verdicts.find((v) => v.id === options.node);
    if (requested === undefined) {
      return err('E_FLEET_NODE_UNKNOWN', `node ${options.node} is not registered`, { node: options.node });
    }
    if (requested.reasons.length > 0) {
      return err(
        'E_FLEET_NODE_REFUSED',
        `node ${requested.id} cannot run ${what}: ${requested.reasons.join(', ')}`,
        { node: requested.id, reasons: requested.reasons },
      );
    }
    return ok(chosen(requested));
  }
  const seed = spreadKey(options.vm ?? '');
  const spreadOf = new Map(rows.map((r) => [r.id, r.spread ?? spreadKey(r.id)]));
  let best: NodeVerdict | undefined;
  for (const v of verdicts) {
    if (v.reasons.length > 0) continue;
    if (best === undefined || before(v, best, seed, spreadOf)) best = v;
  }
  if (best !== undefined) return ok(chosen(best));
  const lines = verdicts.map((v) => `${v.id}: ${v.reasons.join(', ')}`);
  const message =
    verdicts.length === 0
      ? `no node can run ${what}: no node is registered`
      : `no node can run ${what}:\n${lines.map((l) => `  ${l}`).join('\n')}`;
  return err('E_FLEET_NO_CAPABLE_NODE', message, {
    reasons: Object.fromEntries(verdicts.map((v) => [v.id, v.reasons])),
  });
}

/** The choice rule: more free memory first, then the smaller tie key, then the smaller id. */
function before(
  a: NodeVerdict,
  b: NodeVerdict,
  seed: number,
  spreadOf: ReadonlyMap<string, number>,
): boolean {
  if (a.available.memoryMiB !== b.available.memoryMiB) return a.available.memoryMiB > b.available.memoryMiB;
  const ta = tieKey(spreadOf.get(a.id) ?? 0, seed);
  const tb = tieKey(spreadOf.get(b.id) ?? 0, seed);
  if (ta !== tb) return ta < tb;
  return compareIds(a.id, b.id) < 0;
}

/** The tie key of a node for one unikernel; SQL computes the same as `(spread # seed)`. */
export function tieKey(spread: number, seed: number): number {
  return (spread ^ seed) >>> 0;
}

/**
 * FNV-1a of the UTF-8 bytes, shifted to 31 bits so PostgreSQL's `integer` holds it and XOR of two
 * keys stays non-negative there as here. Stored per node (`nodes.spread`) so the prefilter's
 * ORDER BY costs an XOR, not a hash, per row.
 */
export function spreadKey(text: string): number {
  let h = 0x811c9dc5;
  for (const byte of Buffer.from(text, 'utf8')) {
    h ^= byte;
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 1) & 0x7fffffff;
}

/**
 * The JSON document every qualifying node's `capabilities` contains (jsonb `@>`), for the
 * GIN-indexed prefilter. Array containment means "some element contains this object", which is
 * exactly the served-runtime and bridge predicates.
 */
export function containmentFor(req: Requirements): Record<string, unknown> {
  const doc: Record<string, unknown> = { serves: [{ kind: req.runtime, abi: req.abi }] };
  if (req.bridges.length > 0) {
    doc.tun = true;
    doc.netAdmin = true;
    doc.bridges = req.bridges.map((name) => ({ name, up: true }));
  }
  return doc;
}

/** `hvt (ABI 2, 256 MiB, 1 CPU, bridges service)` */
export function describeRequirements(req: Requirements): string {
  const parts = [
    `ABI ${req.abi}`,
    `${req.memoryMiB} MiB`,
    `${req.cpus} CPU${req.cpus === 1 ? '' : 's'}`,
    ...(req.bridges.length > 0
      ? [`bridge${req.bridges.length === 1 ? '' : 's'} ${req.bridges.join(' ')}`]
      : []),
  ];
  return `${req.runtime} (${parts.join(', ')})`;
}

/** Code-unit order, independent of the locale. */
export function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function formatSeconds(ms: number): string {
  return Number.isFinite(ms) ? `${(ms / 1000).toFixed(ms % 1000 === 0 ? 0 : 1)} s` : 'never';
}
