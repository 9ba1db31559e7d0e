// The page-table comparison of the canary's regs test (test/native/canary.test.ts) forgives only
// what the CPU itself writes: a wrong table must still differ from the spec.
import { describe, expect, it } from 'vitest';
import { withoutCpuSetBits } from './layout.js';

describe('withoutCpuSetBits', () => {
  it('clears Accessed in any present entry and Dirty in one that maps a page', () => {
    expect(withoutCpuSetBits('pml4[0]', '0x3023')).toBe('0x3003');
    expect(withoutCpuSetBits('pdpt[0]', '0x4023')).toBe('0x4003');
    expect(withoutCpuSetBits('pd[0]', '0x8023')).toBe('0x8003');
    expect(withoutCpuSetBits('pd[3]', '0x6000e3')).toBe('0x600083');
    expect(withoutCpuSetBits('pt[16]', '0x10021')).toBe('0x10001');
    expect(withoutCpuSetBits('pt[256]', '0x100063')).toBe('0x100003');
  });

  it('keeps Dirty in an entry that points to a table, where the CPU never sets it', () => {
    expect(withoutCpuSetBits('pml4[0]', '0x3063')).toBe('0x3043');
    expect(withoutCpuSetBits('pd[0]', '0x8063')).toBe('0x8043');
  });

  it('keeps a non-present entry whole, and every other bit of a present one', () => {
    expect(withoutCpuSetBits('pt[0]', '0x20')).toBe('0x20');
    expect(withoutCpuSetBits('pt[15]', '0x0')).toBe('0x0');
    expect(withoutCpuSetBits('pd[1]', '0x20008b')).toBe('0x20008b');
    expect(withoutCpuSetBits('pt[16]', '0x11021')).toBe('0x11001');
    expect(withoutCpuSetBits('pt[255]', '0xff003')).toBe('0xff003');
  });
});
