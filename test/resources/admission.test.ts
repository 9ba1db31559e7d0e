// The pure admission decisions: address keys, deadlines by progress, who gives way when a
// budget is full (never a moving connection), and byte reservations that cannot deadlock.

import { describe, expect, it } from 'vitest';
import {
  type AdmissionLimits,
  AdmissionTable,
  addressKey,
  MOVING_MS,
  NEW_MS,
} from '../../src/resources/admission.js';

const KiB = 1024;
const MiB = 1024 * KiB;
const LIMITS: AdmissionLimits = {
  maxPending: 8,
  maxPendingPerAddress: 4,
  maxPendingBytes: 64 * MiB,
  maxPendingBytesPerAddress: 32 * MiB,
  smallBytes: 64 * KiB,
  largeBytes: 16 * MiB,
  firstByteMs: 5000,
  helloMs: 10_000,
  minRate: 4096,
  stallMs: 10_000,
};

/** A table where every admitted entry has been seen by two sweeps (so it may be judged). */
function table(limits: Partial<AdmissionLimits> = {}) {
  return new AdmissionTable({ ...LIMITS, ...limits });
}

describe('address keys', () => {
  it.each([
    ['127.0.0.2', '127.0.0.2'],
    ['::ffff:127.0.0.2', '127.0.0.2'],
    ['::FFFF:10.1.2.3', '10.1.2.3'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    ['2001:db8:1:2::9', '2001:db8:1:2::/64'],
    ['2001:0db8:0001:0002:ffff::1', '2001:db8:1:2::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
  ])('%s counts as %s', (address, key) => {
    expect(addressKey(address)).toBe(key);
  });

  it('two addresses of one /64 share a key, of two /64s do not', () => {
    expect(addressKey('2001:db8::1')).toBe(addressKey('2001:db8::ffff:1'));
    expect(addressKey('2001:db8:0:1::1')).not.toBe(addressKey('2001:db8:0:2::1'));
  });
});

describe('deadlines', () => {
  it('the first byte, then the ClientHello, are due at their deadlines', () => {
    const t = table();
    t.admit(1, 'a', 0);
    t.admit(2, 'a', 0);
    t.read(2, 3, false, 100);
    expect(t.tick(4999).evict).toEqual([]);
    expect(t.tick(5000).evict).toEqual([{ id: 1, reason: 'first-byte-timeout' }]);
    expect(t.tick(9999).evict).toEqual([]);
    expect(t.tick(10_000).evict).toEqual([{ id: 2, reason: 'hello-timeout' }]);
  });

  it('past the hello, a transfer at the minimum rate is never cut, however long; a stall is', () => {
    const t = table();
    t.admit(1, 'a', 0);
    t.read(1, 300, true, 10);
    // Nearly 16 MiB at 4096 B/s: over an hour, one read a second.
    let total = 300;
    for (let s = 1; s <= 4000; s++) {
      total += 4096;
      t.read(1, total, false, 10 + s * 1000);
      expect(t.tick(10 + s * 1000 + 999).evict).toEqual([]);
    }
    const last = 10 + 4000 * 1000;
    expect(t.tick(last + 9_999).evict).toEqual([]);
    expect(t.tick(last + 10_000).evict).toEqual([{ id: 1, reason: 'stalled' }]);
  });

  it('a transfer below the minimum rate runs out of credit', () => {
    const t = table();
    t.admit(1, 'a', 0);
    t.read(1, 300, true, 0);
    let total = 300;
    let cut: number | null = null;
    for (let s = 1; s < 100 && cut === null; s++) {
      total += 2048; // half the rate: the credit drains by half a second a second
      t.read(1, total, false, s * 1000);
      if (t.tick(s * 1000 + 1).evict.length > 0) cut = s;
    }
    expect(cut).not.toBeNull();
    expect(cut).toBeGreaterThanOrEqual(19);
    expect(cut).toBeLessThanOrEqual(21);
  });
});

describe('socket budgets', () => {
  it('above the per-address budget the silent-longest is evicted, not a moving one, not the newcomer', () => {
    const t = table();
    for (let id = 0; id < 4; id++) t.admit(id, 'a', id * 10);
    const later = 30 + NEW_MS;
    t.read(0, 200, false, later - 10); // the oldest is moving
    t.admit(9, 'a', later);
    expect(t.tick(later + 1).evict).toEqual([{ id: 1, reason: 'address-budget' }]);
    expect(t.has(9)).toBe(true);
    expect(t.has(0)).toBe(true);
  });

  it('a connection accepted within NEW_MS that has sent nothing is not evicted for a budget: it may yet speak', () => {
    const t = table({ maxPendingPerAddress: 1 });
    t.admit(1, 'a', 0);
    t.admit(2, 'a', 500);
    expect(t.tick(NEW_MS - 1).evict).toEqual([]);
    t.read(2, 100, false, 2500);
    expect(t.tick(NEW_MS).evict).toEqual([{ id: 1, reason: 'address-budget' }]);
    // The newcomer spoke: it is moving for MOVING_MS after its last byte, then it may go.
    t.admit(3, 'a', NEW_MS);
    expect(t.tick(2500 + MOVING_MS - 1).evict).toEqual([]);
    expect(t.tick(2500 + MOVING_MS).evict).toEqual([{ id: 2, reason: 'address-budget' }]);
  });

  it('when every pending connection is moving, the budget waits; once they fall silent they give way', () => {
    const t = table({ maxPendingPerAddress: 2, maxPending: 100 });
    for (let id = 0; id < 4; id++) expect(t.admit(id, 'a', 0).admitted).toBe(true);
    for (let id = 0; id < 4; id++) t.read(id, 10, false, 5);
    expect(t.tick(6).evict).toEqual([]);
    expect(t.pendingAt('a')).toBe(4);
    expect(t.tick(5 + MOVING_MS).evict).toHaveLength(2);
    expect(t.pendingAt('a')).toBe(2);
  });

  it('beyond twice the budget an accept evicts the idlest at once; refused only if every one is moving', () => {
    const t = table({ maxPending: 2 });
    for (let id = 0; id < 4; id++) t.admit(id, `k${id}`, id);
    t.read(0, 10, false, 4);
    // Young, but id 1 sent nothing and is the oldest such: it goes.
    expect(t.admit(4, 'k4', 5)).toEqual({ admitted: true, evict: [{ id: 1, reason: 'budget' }] });
    for (const id of [2, 3, 4]) t.read(id, 10, false, 6);
    expect(t.admit(5, 'k5', 7)).toEqual({ admitted: false, reason: 'budget' });
    expect(t.admit(6, 'k6', 4 + MOVING_MS)).toEqual({ admitted: true, evict: [{ id: 0, reason: 'budget' }] });
  });

  it('the global budget takes from every address', () => {
    const t = table({ maxPending: 3 });
    t.admit(1, 'a', 0);
    t.admit(2, 'b', 10);
    t.admit(3, 'c', 20);
    t.admit(4, 'd', 30);
    expect(t.tick(30 + NEW_MS).evict).toEqual([{ id: 1, reason: 'budget' }]);
  });
});

describe('byte reservations', () => {
  it('an ordinary handshake never waits; a large one waits for a reservation while others move', () => {
    const t = table({ maxPendingBytes: 32 * MiB, maxPendingBytesPerAddress: 32 * MiB });
    for (let id = 1; id <= 3; id++) t.admit(id, `p${id}`, 0);
    expect(t.read(1, 1 * MiB, true, 10)).toEqual({ hold: false, evict: [] });
    expect(t.read(2, 1 * MiB, true, 10)).toEqual({ hold: false, evict: [] });
    expect(t.reserved).toBe(32 * MiB);
    // The third: both reservations are moving, so it is held, not anyone evicted.
    expect(t.read(3, 1 * MiB, true, 10)).toEqual({ hold: true, evict: [] });
    t.admit(4, 'p4', 10);
    expect(t.read(4, 3 * KiB, true, 11)).toEqual({ hold: false, evict: [] });
    // The first finishes: the held one gets its reservation.
    t.remove(1);
    expect(t.resumable(20)).toEqual([3]);
    expect(t.isHeld(3)).toBe(false);
  });

  it('a silent reservation holder gives way to a moving newcomer', () => {
    const t = table({ maxPendingBytes: 16 * MiB });
    t.admit(1, 'a', 0);
    t.admit(2, 'b', 0);
    t.read(1, 1 * MiB, true, 10);
    // Silent for a second only: a bulk sender may pause so; it keeps its reservation.
    expect(t.read(2, 1 * MiB, true, 10 + MOVING_MS).hold).toBe(true);
    t.remove(2);
    t.admit(2, 'b', 0);
    const later = 10 + LIMITS.stallMs / 2;
    expect(t.read(2, 1 * MiB, true, later)).toEqual({
      hold: false,
      evict: [{ id: 1, reason: 'byte-budget' }],
    });
    expect(t.has(1)).toBe(false);
    expect(t.bytes).toBe(1 * MiB);
  });

  it('the per-address byte budget holds an address back while another proceeds', () => {
    const t = table({ maxPendingBytesPerAddress: 16 * MiB });
    t.admit(1, 'a', 0);
    t.admit(2, 'a', 0);
    t.admit(3, 'b', 0);
    expect(t.read(1, 100 * KiB, true, 1).hold).toBe(false);
    expect(t.read(2, 100 * KiB, true, 1).hold).toBe(true);
    expect(t.read(3, 100 * KiB, true, 1).hold).toBe(false);
  });

  it('beyond the largest handshake a connection is cut', () => {
    const t = table();
    t.admit(1, 'a', 0);
    expect(t.read(1, 16 * MiB + 1, true, 1).evict).toEqual([{ id: 1, reason: 'too-large' }]);
  });

  it('a held connection is not overdue while held, and its clock resumes after', () => {
    const t = table({ maxPendingBytes: 16 * MiB });
    t.admit(1, 'a', 0);
    t.admit(2, 'b', 0);
    t.read(1, 1 * MiB, true, 0);
    expect(t.read(2, 1 * MiB, true, 0).hold).toBe(true);
    expect(t.tick(60_000).evict.map((e) => e.id)).toEqual([1]);
    expect(t.resumable(60_000)).toEqual([2]);
    expect(t.tick(60_000 + 9_999).evict).toEqual([]);
    expect(t.tick(60_000 + 10_000).evict).toEqual([{ id: 2, reason: 'stalled' }]);
  });
});
