// What a node stores in the registry: the probe's capability report, the runtimes it
// serves, and its capacity; how stored JSON is read back, where anything absent or malformed is false.

import type {
  BridgeCapability,
  HostCapabilities,
  TenderCapability,
  TenderKind,
} from '../resources/capabilities.js';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';

export type { BridgeCapability, TenderCapability, TenderKind } from '../resources/capabilities.js';

/** What a probe found on one host, as the registry stores it: replaced wholesale by every report. */
export type CapabilityReport = HostCapabilities;

/** What a node sends at each heartbeat: the probe's report and its `--runtimes`. */
export interface NodeReport extends CapabilityReport {
  /** The runtimes the node is configured to host; empty for `--runtimes none`. */
  readonly runtimes: readonly TenderKind[];
}

/** A runtime a node hosts, at one ABI version. */
export interface ServedRuntime {
  readonly kind: TenderKind;
  readonly abi: number;
}

/**
 * What a node can still give to new unikernels: its root policy minus what is allocated.
 * CPU ids are pins, not consumed, so `cpus` is how many the root policy offers.
 */
export interface FreeResources {
  readonly memoryMiB: number;
  /** Unikernels it may still start (capped at Number.MAX_SAFE_INTEGER: the root allows 2^62−1). */
  readonly vms: number;
  readonly blockStorageMiB: number;
  readonly cpus: number;
}

/** The root policy's limits, for display beside the free figures. */
export interface TotalResources {
  readonly memoryMiB: number;
  readonly vms: number;
  readonly blockStorageMiB: number;
}

/** The capacity part of a report: re-sent after every committed change, without probing. */
export interface NodeCapacity {
  readonly free: FreeResources;
  readonly total: TotalResources;
  /** Names of the unikernels the node runs; a reservation ends when its unikernel is listed. */
  readonly unikernels: readonly string[];
}

/** The `capabilities` column: the probe's findings without quantities, and what is served. */
export interface StoredCapabilities extends Omit<CapabilityReport, 'cpus' | 'memoryMiB' | 'blockStorageMiB'> {
  /** `--runtimes` as configured; null when the row says nothing about it (an empty report). */
  readonly runtimes: readonly TenderKind[] | null;
  /** The configured runtimes the probe found usable, with the ABI versions of their tenders. */
  readonly serves: readonly ServedRuntime[];
}

/** A host that reported nothing, or withdrew its report: what `'{}'` in the registry reads as. */
export const NO_CAPABILITIES: StoredCapabilities = Object.freeze({
  kvm: false,
  tenders: Object.freeze([]),
  tun: false,
  bridges: Object.freeze([]),
  netAdmin: false,
  runtimes: null,
  serves: Object.freeze([]),
});

export const NO_RESOURCES: FreeResources = Object.freeze({
  memoryMiB: 0,
  vms: 0,
  blockStorageMiB: 0,
  cpus: 0,
});

export type ReportError = PetrelError<'E_FLEET_REPORT'>;

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
const isTenderKind = (v: unknown): v is TenderKind => v === 'hvt' || v === 'spt';
const KINDS: readonly TenderKind[] = ['hvt', 'spt'];

function readTender(v: unknown): TenderCapability | null {
  if (!isObject(v)) return null;
  const { kind, path, version, abi } = v;
  if (!isTenderKind(kind) || typeof path !== 'string' || typeof version !== 'string' || !isCount(abi)) {
    return null;
  }
  return { kind, path, version, abi };
}

function readBridge(v: unknown): BridgeCapability | null {
  if (!isObject(v)) return null;
  const { name, up } = v;
  if (typeof name !== 'string' || name === '' || typeof up !== 'boolean') return null;
  return { name, up };
}

function readServed(v: unknown): ServedRuntime | null {
  if (!isObject(v)) return null;
  const { kind, abi } = v;
  return isTenderKind(kind) && isCount(abi) ? { kind, abi } : null;
}

/**
 * The runtimes a node serves: each configured runtime whose tender the probe found, at every ABI
 * version a found tender of that kind speaks; hvt only with a usable KVM. `--runtimes none`
 * serves nothing, whatever the probe found.
 */
export function servedRuntimes(report: CapabilityReport, runtimes: readonly TenderKind[]): ServedRuntime[] {
  const served: ServedRuntime[] = [];
  for (const kind of KINDS) {
    if (!runtimes.includes(kind) || (kind === 'hvt' && !report.kvm)) continue;
    for (const t of report.tenders) {
      if (t.kind === kind && !served.some((s) => s.kind === kind && s.abi === t.abi)) {
        served.push({ kind, abi: t.abi });
      }
    }
  }
  return served;
}

/**
 * Checks a report before it is written (the probe's output and the configuration are an input
 * edge): every field present with its type. The registry then holds only well-formed reports.
 */
export function parseNodeReport(input: unknown): Result<NodeReport, ReportError> {
  const bad = (field: string, why: string) =>
    err('E_FLEET_REPORT', `invalid capability report: ${field} ${why}`, { field });
  if (!isObject(input)) return bad('report', 'must be an object');
  for (const flag of ['kvm', 'tun', 'netAdmin'] as const) {
    if (typeof input[flag] !== 'boolean') return bad(flag, 'must be true or false');
  }
  for (const count of ['cpus', 'memoryMiB', 'blockStorageMiB'] as const) {
    if (!isCount(input[count])) return bad(count, 'must be a non-negative integer');
  }
  if (!Array.isArray(input.tenders)) return bad('tenders', 'must be a list');
  if (!Array.isArray(input.bridges)) return bad('bridges', 'must be a list');
  if (!Array.isArray(input.runtimes)) return bad('runtimes', 'must be a list (empty for --runtimes none)');
  const tenders: TenderCapability[] = [];
  for (const [i, t] of input.tenders.entries()) {
    const tender = readTender(t);
    if (tender === null) return bad(`tenders[${i}]`, 'must be {kind: hvt|spt, path, version, abi}');
    tenders.push(tender);
  }
  const bridges: BridgeCapability[] = [];
  for (const [i, b] of input.bridges.entries()) {
    const bridge = readBridge(b);
    if (bridge === null) return bad(`bridges[${i}]`, 'must be {name, up}');
    if (bridges.some((b) => b.name === bridge.name)) return bad(`bridges[${i}]`, `repeats ${bridge.name}`);
    bridges.push(bridge);
  }
  const runtimes: TenderKind[] = [];
  for (const [i, r] of input.runtimes.entries()) {
    if (!isTenderKind(r)) return bad(`runtimes[${i}]`, 'must be hvt or spt');
    if (runtimes.includes(r)) return bad(`runtimes[${i}]`, `repeats ${r}`);
    runtimes.push(r);
  }
  return ok({
    kvm: input.kvm as boolean,
    tenders,
    tun: input.tun as boolean,
    bridges,
    cpus: input.cpus as number,
    memoryMiB: input.memoryMiB as number,
    blockStorageMiB: input.blockStorageMiB as number,
    netAdmin: input.netAdmin as boolean,
    runtimes,
  });
}

/** Checks the capacity a node sends: counts, and unikernel names that are non-empty strings. */
export function parseCapacity(input: NodeCapacity): Result<NodeCapacity, ReportError> {
  const bad = (field: string) =>
    err('E_FLEET_REPORT', `invalid capacity: ${field} must be a non-negative integer`, { field });
  for (const key of ['memoryMiB', 'vms', 'blockStorageMiB', 'cpus'] as const) {
    if (!isCount(input.free?.[key])) return bad(`free.${key}`);
  }
  for (const key of ['memoryMiB', 'vms', 'blockStorageMiB'] as const) {
    if (!isCount(input.total?.[key])) return bad(`total.${key}`);
  }
  if (!Array.isArray(input.unikernels) || input.unikernels.some((n) => typeof n !== 'string' || n === '')) {
    return err('E_FLEET_REPORT', 'invalid capacity: unikernels must be a list of names', {
      field: 'unikernels',
    });
  }
  return ok(input);
}

/** What a node offers when nothing runs and its root policy is the probed host: the totals. */
export function wholeHost(report: CapabilityReport): NodeCapacity {
  const total = {
    memoryMiB: report.memoryMiB,
    vms: Number.MAX_SAFE_INTEGER,
    blockStorageMiB: report.blockStorageMiB,
  };
  return { free: { ...total, cpus: report.cpus }, total, unikernels: [] };
}

/** The `capabilities` column for a checked report. */
export function storedCapabilities(report: NodeReport): StoredCapabilities {
  const { kvm, tenders, tun, bridges, netAdmin, runtimes } = report;
  return { kvm, tenders, tun, bridges, netAdmin, runtimes, serves: servedRuntimes(report, runtimes) };
}

/** The `resources` column for a capacity. */
export function storedResources(capacity: NodeCapacity): FreeResources & { readonly total: TotalResources } {
  return { ...capacity.free, total: capacity.total };
}

/**
 * Reads the `capabilities` column. Absent = false: a missing or mistyped flag is false, a
 * malformed tender, bridge or served entry is not there. Only `true` counts, never a truthy
 * value, so this agrees with the SQL containment prefilter (`capabilities @> '{...}'`).
 */
export function readCapabilities(stored: unknown): StoredCapabilities {
  if (!isObject(stored)) return NO_CAPABILITIES;
  const list = <T>(v: unknown, read: (x: unknown) => T | null): T[] =>
    Array.isArray(v) ? v.map(read).filter((x): x is T => x !== null) : [];
  return {
    kvm: stored.kvm === true,
    tenders: list(stored.tenders, readTender),
    tun: stored.tun === true,
    bridges: list(stored.bridges, readBridge),
    netAdmin: stored.netAdmin === true,
    runtimes: Array.isArray(stored.runtimes) ? stored.runtimes.filter(isTenderKind) : null,
    serves: list(stored.serves, readServed),
  };
}

const count = (v: unknown) => (isCount(v) ? v : 0);

/** Reads the free figures of the `resources` column; a missing or malformed quantity is 0. */
export function readResources(stored: unknown): FreeResources {
  if (!isObject(stored)) return NO_RESOURCES;
  return {
    memoryMiB: count(stored.memoryMiB),
    vms: count(stored.vms),
    blockStorageMiB: count(stored.blockStorageMiB),
    cpus: count(stored.cpus),
  };
}

/** Reads the totals of the `resources` column; null when the row has none. */
export function readTotals(stored: unknown): TotalResources | null {
  const total = isObject(stored) ? stored.total : undefined;
  if (!isObject(total)) return null;
  return {
    memoryMiB: count(total.memoryMiB),
    vms: count(total.vms),
    blockStorageMiB: count(total.blockStorageMiB),
  };
}
