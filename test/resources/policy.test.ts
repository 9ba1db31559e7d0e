import { describe, expect, it } from 'vitest';
import { isSubPolicy, makePolicy, usable } from '../../src/resources/policy.js';
import { policy } from './helpers.js';

// p1 of Albatross' own suite: 1 VM, cpus {0}, 10 MiB, block 5, bridges {service}.
const p1 = policy({ vms: 1, cpuids: [0], memory: 10, block: 5, bridges: ['service'] });

const refusal = (sup: typeof p1, sub: typeof p1) => {
  const result = isSubPolicy(sup, sub);
  return result.ok ? null : { code: result.error.code, message: result.error.message };
};

describe('isSubPolicy', () => {
  it('accepts an equal policy', () => {
    expect(refusal(p1, p1)).toBeNull();
  });

  it.each([
    [{ vms: 2 }, 'E_POLICY_VMS', 'policy above allows 1 unikernels, which is fewer than 2'],
    [{ cpuids: [1] }, 'E_POLICY_CPUIDS', 'policy above does not allow CPUids 1'],
    [{ cpuids: [0, 1, 2] }, 'E_POLICY_CPUIDS', 'policy above does not allow CPUids 1, 2'],
    [{ memory: 11 }, 'E_POLICY_MEMORY', 'policy above allows 10 MB memory, which is fewer than 11 MB'],
    [{ block: 6 }, 'E_POLICY_BLOCK', 'policy above allows 5 MB block storage, which is fewer than 6 MB'],
    [
      { bridges: ['service2'] },
      'E_POLICY_BRIDGES',
      'policy above allows bridge(s) service, which is not a superset of service2',
    ],
    [
      { bridges: ['service', 'other'] },
      'E_POLICY_BRIDGES',
      'policy above allows bridge(s) service, which is not a superset of other, service',
    ],
  ])('refuses a sub-policy with %j: %s', (change, code, message) => {
    const sub = policy({ vms: 1, cpuids: [0], memory: 10, block: 5, bridges: ['service'], ...change });
    expect(refusal(p1, sub)).toEqual({ code, message });
  });

  it('checks in Albatross order: unikernels, memory, cpuids, bridges, block', () => {
    const everythingLarger = policy({ vms: 9, memory: 99, cpuids: [7], block: 99, bridges: ['x'] });
    expect(refusal(p1, everythingLarger)?.code).toBe('E_POLICY_VMS');
    expect(refusal(p1, policy({ ...everythingLarger, vms: 1 }))?.code).toBe('E_POLICY_MEMORY');
    expect(refusal(p1, policy({ ...everythingLarger, vms: 1, memory: 1 }))?.code).toBe('E_POLICY_CPUIDS');
    expect(refusal(p1, policy({ vms: 1, memory: 1, cpuids: [0], block: 99, bridges: ['x'] }))?.code).toBe(
      'E_POLICY_BRIDGES',
    );
  });

  it('handles block none on either side', () => {
    const noBlock = policy({ ...p1, block: null });
    expect(refusal(p1, noBlock)).toBeNull();
    expect(refusal(noBlock, noBlock)).toBeNull();
    expect(refusal(noBlock, p1)).toEqual({
      code: 'E_POLICY_BLOCK',
      message: 'policy above allows 0 MB block storage, which is fewer than 5 MB',
    });
  });
});

describe('makePolicy', () => {
  it('sorts and de-duplicates its sets', () => {
    const p = policy({ cpuids: [3, 1, 3], bridges: ['b', 'a', 'b'] });
    expect(p.cpuids).toEqual([1, 3]);
    expect(p.bridges).toEqual(['a', 'b']);
    expect(Object.isFrozen(p) && Object.isFrozen(p.cpuids)).toBe(true);
  });

  it.each([
    [{ memory: -1 }, 'memory'],
    [{ memory: 1.5 }, 'memory'],
    [{ vms: -1 }, 'unikernels'],
    [{ vms: 1n << 62n }, 'unikernels'],
    [{ block: -5 }, 'block'],
    [{ cpuids: [-1] }, 'cpuid'],
    [{ bridges: [''] }, 'bridge'],
  ])('refuses %o naming %s', (change, field) => {
    const result = makePolicy({ vms: 1, memory: 10, cpuids: [0], block: null, bridges: [], ...change });
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.error.code).toBe('E_POLICY_INVALID');
      expect(result.error.message).toContain(field);
    }
  });
});

describe('usable', () => {
  it.each([
    [{ vms: 0 }, 'Unusable policy with no unikernels'],
    [{ cpuids: [] }, 'Unusable policy with no CPUids'],
    [{ memory: 16 }, 'Unusable policy with memory 16 MB <= 16 MB'],
  ])('refuses %j', (change, message) => {
    const result = usable(policy({ memory: 64, ...change }));
    expect(result.ok ? null : result.error.message).toBe(message);
  });

  it('accepts a policy that can run something', () => {
    expect(usable(policy({ memory: 17 })).ok).toBe(true);
  });
});
