// Test shorthands for building names, paths and policies from literals.
import { unwrap } from '../../src/resources/errors.js';
import { type Label, type Name, type Path, parseName, parsePath } from '../../src/resources/name.js';
import { makePolicy, type Policy, type PolicyInput } from '../../src/resources/policy.js';
import type { Allocation } from '../../src/resources/tree.js';

export const name = (text: string): Name => unwrap(parseName(text));
export const path = (text: string): Path => unwrap(parsePath(text));
export const policy = (input: Partial<PolicyInput> = {}): Policy =>
  unwrap(makePolicy({ vms: 1, memory: 10, cpuids: [0], block: null, bridges: [], ...input }));
export const vm = (input: Partial<Omit<Allocation, 'blocks'>> & { blocks?: string[] } = {}): Allocation => ({
  memory: 10,
  cpuids: [0],
  bridges: [],
  ...input,
  blocks: (input.blocks ?? []) as Label[],
});
