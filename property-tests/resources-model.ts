// A deliberately naive reference model of the resource tree: flat maps, and every check and
// aggregate recomputed from scratch by scanning everything. Slow and obviously right, it is the
// oracle the optimised tree in src/resources/tree.ts is compared with.

import {
  type Label,
  listingOrder,
  type Name,
  type Path,
  printName,
  printPath,
} from '../src/resources/name.js';
import { isSubPolicy, type Policy, samePolicy } from '../src/resources/policy.js';
import type { Allocation } from '../src/resources/tree.js';

interface Vm {
  readonly name: Name;
  readonly allocation: Allocation;
}
interface Block {
  readonly name: Name;
  readonly size: number;
  readonly inUse: boolean;
}

export interface ModelUsage {
  vms: number;
  memory: number;
  cpus: Map<number, number>;
  bridges: Map<string, number>;
  block: number;
}

const isPrefix = (prefix: Path, path: Path) =>
  prefix.length <= path.length && prefix.every((l, i) => l === path[i]);
const subset = <T>(items: Iterable<T>, of: readonly T[]) => [...items].every((x) => of.includes(x));

export class Model {
  policies = new Map<string, { path: Path; policy: Policy }>();
  vms = new Map<string, Vm>();
  blocks = new Map<string, Block>();

  clone(): Model {
    const copy = new Model();
    copy.policies = new Map(this.policies);
    copy.vms = new Map(this.vms);
    copy.blocks = new Map(this.blocks);
    return copy;
  }

  usage(path: Path): ModelUsage {
    const usage: ModelUsage = { vms: 0, memory: 0, cpus: new Map(), bridges: new Map(), block: 0 };
    for (const { name, allocation } of this.vms.values()) {
      if (!isPrefix(path, name.path)) continue;
      usage.vms += 1;
      usage.memory += allocation.memory;
      for (const c of new Set(allocation.cpuids)) usage.cpus.set(c, (usage.cpus.get(c) ?? 0) + 1);
      for (const b of new Set(allocation.bridges)) usage.bridges.set(b, (usage.bridges.get(b) ?? 0) + 1);
    }
    for (const block of this.blocks.values()) if (isPrefix(path, block.name.path)) usage.block += block.size;
    return usage;
  }

  /** Paths from `path` up to the root that have a policy, deepest first. */
  private policiesUpFrom(path: Path): { depth: number; policy: Policy }[] {
    const found: { depth: number; policy: Policy }[] = [];
    for (let depth = path.length; depth >= 0; depth--) {
      const entry = this.policies.get(printPath(path.slice(0, depth)));
      if (entry) found.push({ depth, policy: entry.policy });
    }
    return found;
  }

  /** Returns the error code of a rejection, or null after applying the change. */
  addPolicy(path: Path, policy: Policy): string | null {
    const key = printPath(path);
    const existing = this.policies.get(key);
    if (existing && samePolicy(existing.policy, policy)) return null;
    for (const { depth, policy: above } of this.policiesUpFrom(path)) {
      if (depth === path.length || depth === 0) continue;
      const fits = isSubPolicy(above, policy);
      if (!fits.ok) return fits.error.code;
    }
    if (path.length > 0) {
      const below = [...this.policies.values()]
        .filter((p) => p.path.length > path.length && isPrefix(path, p.path))
        .sort((a, b) => listingOrder(a.path, b.path));
      for (const { policy: desc } of below) {
        const fits = isSubPolicy(policy, desc);
        if (!fits.ok) return fits.error.code;
      }
    }
    const usage = this.usage(path);
    if (!subset(usage.cpus.keys(), policy.cpuids)) return 'E_POLICY_CPUIDS';
    if (!subset(usage.bridges.keys(), policy.bridges)) return 'E_POLICY_BRIDGES';
    if (BigInt(usage.vms) > policy.vms) return 'E_POLICY_VMS';
    if (usage.memory > policy.memory) return 'E_POLICY_MEMORY';
    if (usage.block > (policy.block ?? 0)) return 'E_POLICY_BLOCK';
    this.policies.set(key, { path, policy });
    return null;
  }

  removePolicy(path: Path): string | null {
    return this.policies.delete(printPath(path)) ? null : 'E_POLICY_NOT_FOUND';
  }

  admit(name: Name, allocation: Allocation): string | null {
    if (name.label === null) return 'E_NAME_NOT_ENTRY';
    for (const { depth, policy } of this.policiesUpFrom(name.path)) {
      const usage = this.usage(name.path.slice(0, depth));
      if (BigInt(usage.vms) + 1n > policy.vms) return 'E_POLICY_VMS';
      if (allocation.memory > policy.memory - usage.memory) return 'E_POLICY_MEMORY';
      if (!subset(allocation.cpuids, policy.cpuids)) return 'E_POLICY_CPUIDS';
      if (!subset(allocation.bridges, policy.bridges)) return 'E_POLICY_BRIDGES';
    }
    for (const label of allocation.blocks) {
      const block = this.blocks.get(printName({ path: name.path, label }));
      if (!block) return 'E_BLOCK_NOT_FOUND';
      if (block.inUse) return 'E_BLOCK_IN_USE';
    }
    if (this.vms.has(printName(name))) return 'E_UNIKERNEL_EXISTS';
    this.vms.set(printName(name), { name, allocation });
    this.markBlocks(name.path, allocation.blocks, true);
    return null;
  }

  release(name: Name): string | null {
    const vm = this.vms.get(printName(name));
    if (!vm || name.label === null) return 'E_UNIKERNEL_NOT_FOUND';
    this.vms.delete(printName(name));
    this.markBlocks(name.path, vm.allocation.blocks, false);
    return null;
  }

  private markBlocks(path: Path, labels: readonly Label[], inUse: boolean): void {
    for (const label of labels) {
      const key = printName({ path, label });
      const block = this.blocks.get(key);
      if (block) this.blocks.set(key, { ...block, inUse });
    }
  }

  addBlock(name: Name, size: number): string | null {
    if (name.label === null) return 'E_NAME_NOT_ENTRY';
    if (this.blocks.has(printName(name))) return 'E_BLOCK_EXISTS';
    if (size < 1) return 'E_BLOCK_SIZE';
    for (const { depth, policy } of this.policiesUpFrom(name.path)) {
      if (policy.block === null) return 'E_POLICY_BLOCK';
      if (size > policy.block - this.usage(name.path.slice(0, depth)).block) return 'E_POLICY_BLOCK';
    }
    this.blocks.set(printName(name), { name, size, inUse: false });
    return null;
  }

  removeBlock(name: Name): string | null {
    const block = this.blocks.get(printName(name));
    if (!block || name.label === null) return 'E_BLOCK_NOT_FOUND';
    if (block.inUse) return 'E_BLOCK_IN_USE';
    this.blocks.delete(printName(name));
    return null;
  }
}
