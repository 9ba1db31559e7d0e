// Policies: what a path of the tree may use (albatross-semantics.md §4.1–4.2).
// A Policy is built only by `makePolicy`, so its sets are sorted, unique and frozen.

import { err, ok, type PetrelError, type Result } from './errors.js';

export interface Policy {
  /** Maximum number of unikernels; a bigint because the root policy's is OCaml's max_int (2^62 − 1). */
  readonly vms: bigint;
  /** Maximum memory in MiB. */
  readonly memory: number;
  /** CPU ids unikernels may be pinned to, ascending. */
  readonly cpuids: readonly number[];
  /** Maximum block storage in MiB; null means no block devices at all. */
  readonly block: number | null;
  /** Host bridges unikernels may attach to, sorted. */
  readonly bridges: readonly string[];
}

export interface PolicyInput {
  readonly vms: bigint | number;
  readonly memory: number;
  readonly cpuids: Iterable<number>;
  readonly block: number | null;
  readonly bridges: Iterable<string>;
}

/** Which limit of a policy a rejection is about. */
export type LimitCode =
  | 'E_POLICY_VMS'
  | 'E_POLICY_MEMORY'
  | 'E_POLICY_CPUIDS'
  | 'E_POLICY_BRIDGES'
  | 'E_POLICY_BLOCK';

export type PolicyCode =
  | 'E_POLICY_INVALID'
  | 'E_POLICY_UNUSABLE'
  | 'E_POLICY_VMS'
  | 'E_POLICY_MEMORY'
  | 'E_POLICY_CPUIDS'
  | 'E_POLICY_BRIDGES'
  | 'E_POLICY_BLOCK';

export type PolicyError = PetrelError<PolicyCode>;

/** OCaml's max_int, the unikernel limit of the discovered root policy. */
export const MAX_VMS = (1n << 62n) - 1n;

const isCount = (n: number): boolean => Number.isSafeInteger(n) && n >= 0;

export function makePolicy(input: PolicyInput): Result<Policy, PolicyError> {
  const vms = BigInt(input.vms);
  const invalid = (field: string, value: unknown) =>
    err('E_POLICY_INVALID', `invalid policy: ${field} ${String(value)} must be a non-negative integer`, {
      field,
    });
  if (vms < 0n || vms > MAX_VMS) return invalid('unikernels', vms);
  if (!isCount(input.memory)) return invalid('memory', input.memory);
  if (input.block !== null && !isCount(input.block)) return invalid('block', input.block);
  const cpuids = [...new Set(input.cpuids)].sort((a, b) => a - b);
  const badCpu = cpuids.find((id) => !isCount(id));
  if (badCpu !== undefined) return invalid('cpuid', badCpu);
  const bridges = [...new Set(input.bridges)].sort();
  if (bridges.some((b) => b === '')) {
    return err('E_POLICY_INVALID', 'invalid policy: empty bridge name', { field: 'bridges' });
  }
  return ok(
    Object.freeze({
      vms,
      memory: input.memory,
      cpuids: Object.freeze(cpuids),
      block: input.block,
      bridges: Object.freeze(bridges),
    }),
  );
}

/** Albatross prints sets as their elements joined with `, `. */
export const list = (items: Iterable<number | string>): string => [...items].join(', ');

/** Elements of `items` that are not in `allowed` (both small: CPU ids, bridges). */
export function missing<T>(items: Iterable<T>, allowed: readonly T[]): T[] {
  const out: T[] = [];
  for (const item of items) if (!allowed.includes(item)) out.push(item);
  return out;
}

/**
 * `sub` fits inside `sup` (Albatross `is_smaller`). Checked in Albatross' order — unikernels,
 * memory, cpuids, bridges, block — and the first failure is the error.
 */
export function isSubPolicy(sup: Policy, sub: Policy): Result<void, PetrelError<LimitCode>> {
  if (sup.vms < sub.vms) {
    return err('E_POLICY_VMS', `policy above allows ${sup.vms} unikernels, which is fewer than ${sub.vms}`, {
      limit: sup.vms,
      request: sub.vms,
    });
  }
  if (sup.memory < sub.memory) {
    return err(
      'E_POLICY_MEMORY',
      `policy above allows ${sup.memory} MB memory, which is fewer than ${sub.memory} MB`,
      { limit: sup.memory, request: sub.memory },
    );
  }
  const cpus = missing(sub.cpuids, sup.cpuids);
  if (cpus.length > 0) {
    return err('E_POLICY_CPUIDS', `policy above does not allow CPUids ${list(cpus)}`, { missing: cpus });
  }
  if (missing(sub.bridges, sup.bridges).length > 0) {
    return err(
      'E_POLICY_BRIDGES',
      `policy above allows bridge(s) ${list(sup.bridges)}, which is not a superset of ${list(sub.bridges)}`,
      { limit: sup.bridges, request: sub.bridges },
    );
  }
  if (sub.block !== null && (sup.block === null || sup.block < sub.block)) {
    return err(
      'E_POLICY_BLOCK',
      `policy above allows ${sup.block ?? 0} MB block storage, which is fewer than ${sub.block} MB`,
      { limit: sup.block, request: sub.block },
    );
  }
  return ok(undefined);
}

/** The client-side sanity check Albatross applies before signing a delegation. */
export function usable(policy: Policy): Result<void, PolicyError> {
  const unusable = (message: string) => err('E_POLICY_UNUSABLE', message);
  if (policy.vms <= 0n) return unusable('Unusable policy with no unikernels');
  if (policy.cpuids.length === 0) return unusable('Unusable policy with no CPUids');
  if (policy.memory <= 16) return unusable(`Unusable policy with memory ${policy.memory} MB <= 16 MB`);
  // Albatross also refuses a negative block limit here; makePolicy already refuses it.
  return ok(undefined);
}

export function samePolicy(a: Policy, b: Policy): boolean {
  const sameList = <T>(x: readonly T[], y: readonly T[]) =>
    x.length === y.length && x.every((v, i) => v === y[i]);
  return (
    a.vms === b.vms &&
    a.memory === b.memory &&
    a.block === b.block &&
    sameList(a.cpuids, b.cpuids) &&
    sameList(a.bridges, b.bridges)
  );
}
