// The capability report a node stores in the registry (the JSON shape of issue 8's probe) and
// its free resources; how stored JSON is read back, where anything absent or malformed is false.

import { err, ok, type PetrelError, type Result } from '../resources/errors.js';

export type TenderKind = 'hvt' | 'spt';

export interface TenderCapability {
  readonly kind: TenderKind;
  /** Absolute path of the tender executable. */
  readonly path: string;
  /** The banner of its `--version` output (`solo5-hvt tender, version v0.12.1`). */
  readonly version: string;
  /** N of its `ABI version N` line. */
  readonly abi: number;
}

export interface BridgeCapability {
  readonly name: string;
  readonly up: boolean;
}

/**
 * What a probe found on one host, as plain JSON. Produced by probing, never by configuration, and
 * replaced wholesale by every report. A capability that is absent is false.
 */
export interface CapabilityReport {
  /** The KVM device could be opened read-write and answered KVM_GET_API_VERSION. */
  readonly kvm: boolean;
  /** Every tender found whose `--version` printed an ABI line. */
  readonly tenders: readonly TenderCapability[];
  /** /dev/net/tun could be opened. */
  readonly tun: boolean;
  readonly bridges: readonly BridgeCapability[];
  /** Online CPUs of the host. */
  readonly cpus: number;
  /** Memory of the host in MiB. */
  readonly memoryMiB: number;
  /** Space available for block devices in the state directory, in MiB. */
  readonly blockStorageMiB: number;
  /** The daemon can create a tap (CAP_NET_ADMIN). */
  readonly netAdmin: boolean;
}

/** What a node can still give to new unikernels: its probed totals minus what its VMs use. */
export interface FreeResources {
  readonly cpus: number;
  readonly memoryMiB: number;
  readonly blockStorageMiB: number;
}

/** The `capabilities` column: the report without the quantities (those go to `resources`). */
export type StoredCapabilities = Omit<CapabilityReport, 'cpus' | 'memoryMiB' | 'blockStorageMiB'>;

/** A host that reported nothing: what `'{}'` in the registry reads as. */
export const NO_CAPABILITIES: StoredCapabilities = Object.freeze({
  kvm: false,
  tenders: Object.freeze([]),
  tun: false,
  bridges: Object.freeze([]),
  netAdmin: false,
});

export const NO_RESOURCES: FreeResources = Object.freeze({ cpus: 0, memoryMiB: 0, blockStorageMiB: 0 });

export type ReportError = PetrelError<'E_FLEET_REPORT'>;

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
const isTenderKind = (v: unknown): v is TenderKind => v === 'hvt' || v === 'spt';

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

/**
 * Checks a report before it is written (the probe's output is an input edge): every field
 * present with its type. The registry then holds only well-formed reports.
 */
export function parseCapabilityReport(input: unknown): Result<CapabilityReport, ReportError> {
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
  return ok({
    kvm: input.kvm as boolean,
    tenders,
    tun: input.tun as boolean,
    bridges,
    cpus: input.cpus as number,
    memoryMiB: input.memoryMiB as number,
    blockStorageMiB: input.blockStorageMiB as number,
    netAdmin: input.netAdmin as boolean,
  });
}

/** The `capabilities` column for a report. */
export function storedCapabilities(report: CapabilityReport): StoredCapabilities {
  const { kvm, tenders, tun, bridges, netAdmin } = report;
  return { kvm, tenders, tun, bridges, netAdmin };
}

/**
 * Reads the `capabilities` column. Absent = false: a missing or mistyped flag is false, a
 * malformed tender or bridge entry is not there. Only `true` counts, never a truthy value, so
 * this agrees with the SQL containment prefilter (`capabilities @> '{"kvm": true}'`).
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
  };
}

/** Reads the `resources` column; a missing or malformed quantity is 0. */
export function readResources(stored: unknown): FreeResources {
  if (!isObject(stored)) return NO_RESOURCES;
  const count = (v: unknown) => (isCount(v) ? v : 0);
  return {
    cpus: count(stored.cpus),
    memoryMiB: count(stored.memoryMiB),
    blockStorageMiB: count(stored.blockStorageMiB),
  };
}
