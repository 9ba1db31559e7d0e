// Reports, rows and requirements for the fleet tests: a node that can run everything unless a
// test takes something away.

import {
  type NodeCapacity,
  type NodeReport,
  storedCapabilities,
  storedResources,
  wholeHost,
} from '../../src/fleet/capabilities.js';
import type { NodeRow, Requirements, Reserved } from '../../src/fleet/placement.js';

/** A capable hvt + spt host (ABI 2, both configured) with bridge `service` up, 4 CPUs and 4 GiB. */
export function report(overrides: Partial<NodeReport> = {}): NodeReport {
  return {
    kvm: true,
    tenders: [
      { kind: 'hvt', path: '/usr/local/bin/solo5-hvt', version: 'solo5-hvt tender, version v0.9.0', abi: 2 },
      { kind: 'spt', path: '/usr/local/bin/solo5-spt', version: 'solo5-spt tender, version v0.9.0', abi: 2 },
    ],
    tun: true,
    bridges: [{ name: 'service', up: true }],
    cpus: 4,
    memoryMiB: 4096,
    blockStorageMiB: 10_240,
    netAdmin: true,
    runtimes: ['hvt', 'spt'],
    ...overrides,
  };
}

/** The capacity of `r` with `memoryMiB` free (default: all of it) and `unikernels` running. */
export function capacity(
  r: NodeReport,
  memoryMiB = r.memoryMiB,
  unikernels: readonly string[] = [],
): NodeCapacity {
  const whole = wholeHost(r);
  return { ...whole, free: { ...whole.free, memoryMiB }, unikernels };
}

/** An hvt unikernel of ABI 2 on bridge `service`, 256 MiB, 1 CPU. */
export const HVT: Requirements = { runtime: 'hvt', abi: 2, bridges: ['service'], memoryMiB: 256, cpus: 1 };
export const SPT: Requirements = { runtime: 'spt', abi: 2, bridges: [], memoryMiB: 64, cpus: 1 };

export const NOW = new Date('2026-01-01T12:00:00Z');

/** A row as the registry would return it for `r`, seen `ageMs` before NOW. */
export function row(id: string, r: NodeReport = report(), ageMs = 1_000, reserved?: Reserved): NodeRow {
  return {
    id,
    address: `${id}.example:1025`,
    lastSeen: new Date(NOW.getTime() - ageMs),
    capabilities: storedCapabilities(r),
    resources: storedResources(wholeHost(r)),
    ...(reserved === undefined ? {} : { reserved }),
  };
}
