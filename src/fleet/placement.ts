// Placement, pure: a workload's requirements become predicates, every node row gets a verdict
// (the reasons it cannot run the workload), and one qualifying node is chosen or the placement
// fails with one line per node. The registry's SQL prefilter is derived from the same predicates.
//
// What must stay true:
//   1. A node qualifies only if it was seen within the freshness window AND satisfies every
//      predicate. Capabilities absent from its report are false (capabilities.ts), so a node
//      that never reported (`'{}'`) qualifies for nothing.
//   2. Choice rule: most free memory; ties broken by the smaller node id (code-unit order).
//   3. An explicit node is a request: chosen only if it qualifies, refused with its reasons
//      otherwise; never replaced by another node.
//   4. `containmentFor(req)` is implied by the capability predicates, so the SQL prefilter
//      (`capabilities @> containment`) never drops a node that qualifies.

import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import {
  type FreeResources,
  readCapabilities,
  readResources,
  type StoredCapabilities,
  type TenderKind,
} from './capabilities.js';

/** One row of the `nodes` table, as the registry reads it. */
export interface NodeRow {
  readonly id: string;
  readonly address: string;
  readonly lastSeen: Date;
  /** The `capabilities` column, unvalidated. */
  readonly capabilities: unknown;
  /** The `resources` column (free resources), unvalidated. */
  readonly resources: unknown;
}

/** What a unikernel needs from the node it runs on. */
export interface Requirements {
  /** The tender its ABI note asks for. */
  readonly runtime: TenderKind;
  /** The ABI version of its ABI note; the tender must speak exactly this version. */
  readonly abi: number;
  /** Bridges its networks attach to. */
  readonly bridges: readonly string[];
  readonly memoryMiB: number;
  readonly cpus: number;
}

export type Predicate =
  | { readonly kind: 'kvm' }
  | { readonly kind: 'tender'; readonly tender: TenderKind; readonly abi: number }
  | { readonly kind: 'taps' }
  | { readonly kind: 'bridge'; readonly name: string }
  | { readonly kind: 'memory'; readonly mib: number }
  | { readonly kind: 'cpus'; readonly count: number };

export interface PlacementOptions {
  /** The clock: the database's `now()` when the rows came from the registry. */
  readonly now: Date;
  /** Nodes last seen longer ago than this do not qualify. */
  readonly freshMs: number;
  /** `--node ID`: place only there, if it qualifies. */
  readonly node?: string;
}

export interface NodeVerdict {
  readonly id: string;
  readonly address: string;
  readonly ageMs: number;
  readonly free: FreeResources;
  /** Why the node cannot run the workload; empty when it qualifies. */
  readonly reasons: readonly string[];
}

export interface Placement {
  readonly node: string;
  readonly address: string;
  readonly free: FreeResources;
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

/** hvt ⇒ kvm and an hvt tender of the image's ABI; spt ⇒ an spt tender of that ABI; networks ⇒
 * taps and each bridge; then free memory and CPUs. */
export function predicatesFor(req: Requirements): Predicate[] {
  const predicates: Predicate[] = [];
  if (req.runtime === 'hvt') predicates.push({ kind: 'kvm' });
  predicates.push({ kind: 'tender', tender: req.runtime, abi: req.abi });
  if (req.bridges.length > 0) predicates.push({ kind: 'taps' });
  for (const name of req.bridges) predicates.push({ kind: 'bridge', name });
  predicates.push({ kind: 'memory', mib: req.memoryMiB }, { kind: 'cpus', count: req.cpus });
  return predicates;
}

/** Why `predicate` fails on a node, or null when it holds. */
export function check(predicate: Predicate, caps: StoredCapabilities, free: FreeResources): string | null {
  switch (predicate.kind) {
    case 'kvm':
      return caps.kvm ? null : 'no kvm';
    case 'tender': {
      const ofKind = caps.tenders.filter((t) => t.kind === predicate.tender);
      if (ofKind.some((t) => t.abi === predicate.abi)) return null;
      if (ofKind.length === 0) return `no ${predicate.tender} tender`;
      const has = [...new Set(ofKind.map((t) => t.abi))].sort((a, b) => a - b).join(', ');
      return `no ${predicate.tender} tender with ABI version ${predicate.abi} (has ${has})`;
    }
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
        : `not enough memory (free ${free.memoryMiB} MiB, need ${predicate.mib} MiB)`;
    case 'cpus':
      return free.cpus >= predicate.count
        ? null
        : `not enough CPUs (free ${free.cpus}, need ${predicate.count})`;
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

function verdict(row: NodeRow, predicates: readonly Predicate[], options: Omit<PlacementOptions, 'node'>) {
  const caps = readCapabilities(row.capabilities);
  const free = readResources(row.resources);
  const ageMs = options.now.getTime() - row.lastSeen.getTime();
  const reasons: string[] = [];
  // A clock a little ahead of the database's (negative age) still counts as fresh.
  if (!(ageMs <= options.freshMs)) {
    reasons.push(
      `stale (last seen ${formatSeconds(ageMs)} ago, fresh window ${formatSeconds(options.freshMs)})`,
    );
  }
  for (const predicate of predicates) {
    const reason = check(predicate, caps, free);
    if (reason !== null) reasons.push(reason);
  }
  return { id: row.id, address: row.address, ageMs, free, reasons };
}

/** Chooses a node for `req` among `rows`, or says for every node why it cannot. */
export function place(
  rows: readonly NodeRow[],
  req: Requirements,
  options: PlacementOptions,
): Result<Placement, PlacementError> {
  const verdicts = explain(rows, req, options);
  const what = describeRequirements(req);
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
  let best: NodeVerdict | undefined;
  for (const v of verdicts) {
    if (v.reasons.length > 0) continue;
    // Verdicts are in id order, so keeping the first of equal memory breaks ties by id.
    if (best === undefined || v.free.memoryMiB > best.free.memoryMiB) best = v;
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

/**
 * The JSON document every qualifying node's `capabilities` contains (jsonb `@>`), for the
 * GIN-indexed prefilter. Array containment means "some element contains this object", which is
 * exactly the tender and bridge predicates.
 */
export function containmentFor(req: Requirements): Record<string, unknown> {
  const doc: Record<string, unknown> = { tenders: [{ kind: req.runtime, abi: req.abi }] };
  if (req.runtime === 'hvt') doc.kvm = true;
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

function chosen(v: NodeVerdict): Placement {
  return { node: v.id, address: v.address, free: v.free };
}

/** Code-unit order, independent of the locale. */
export function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function formatSeconds(ms: number): string {
  return Number.isFinite(ms) ? `${(ms / 1000).toFixed(ms % 1000 === 0 ? 0 : 1)} s` : 'never';
}
