// Admission under random interleavings of accepts, reads, sweeps and closes: a moving or held
// connection is never evicted, byte reservations never exceed their budgets, every byte past
// a connection's small allowance is covered by a reservation, and nobody waits for a
// reservation that could be had.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type AdmissionLimits, AdmissionTable, MOVING_MS, NEW_MS } from '../src/resources/admission.js';

const RUNS = Number(process.env.PROPERTY_RUNS ?? 300);
const KiB = 1024;

const limits = fc.record({
  maxPending: fc.integer({ min: 1, max: 4 }),
  maxPendingPerAddress: fc.integer({ min: 1, max: 6 }),
  maxPendingBytes: fc.integer({ min: 64 * KiB, max: 2048 * KiB }),
  maxPendingBytesPerAddress: fc.integer({ min: 64 * KiB, max: 1024 * KiB }),
  smallBytes: fc.constant(16 * KiB),
  largeBytes: fc.integer({ min: 64 * KiB, max: 512 * KiB }),
  firstByteMs: fc.integer({ min: 100, max: 5000 }),
  helloMs: fc.integer({ min: 100, max: 10_000 }),
  minRate: fc.integer({ min: 100, max: 100_000 }),
  stallMs: fc.integer({ min: 100, max: 10_000 }),
}) satisfies fc.Arbitrary<AdmissionLimits>;

const BUDGETS = new Set(['budget', 'address-budget', 'byte-budget']);

const op = fc.oneof(
  fc.record({ kind: fc.constant('admit' as const), key: fc.constantFrom('a', 'b', 'c') }),
  fc.record({
    kind: fc.constant('read' as const),
    which: fc.nat(),
    bytes: fc.integer({ min: 1, max: 96 * KiB }),
    hello: fc.boolean(),
  }),
  fc.record({ kind: fc.constant('tick' as const) }),
  fc.record({ kind: fc.constant('remove' as const), which: fc.nat() }),
  fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: 1, max: 3000 }) }),
);

describe('admission table', () => {
  it('never evicts a moving or held connection and keeps every byte budget', () => {
    fc.assert(
      fc.property(limits, fc.array(op, { maxLength: 120 }), (l, ops) => {
        const t = new AdmissionTable(l);
        const reservation = Math.min(l.largeBytes, l.maxPendingBytes, l.maxPendingBytesPerAddress);
        let now = 0;
        let next = 0;
        const live = new Map<
          number,
          { key: string; bytes: number; lastRead: number | null; accepted: number }
        >();
        const ids = () => [...live.keys()];
        // A resumed connection is read at once: it counts as moving from now.
        const touch = (id: number) => {
          const e = live.get(id);
          if (e !== undefined) e.lastRead = now;
        };
        const evicted = (
          list: readonly { id: number; reason: string }[],
          reading?: number,
          atAccept = false,
        ) => {
          for (const { id, reason } of list) {
            const e = live.get(id);
            expect(e).toBeDefined();
            // Deadlines cut whoever misses them; a budget makes room only from the idle.
            if (id !== reading && BUDGETS.has(reason)) {
              // Never one that read within MOVING_MS; one accepted within NEW_MS only to admit
              // a newcomer beyond twice the budget, and only if it never read.
              if (e?.lastRead != null) expect(now - e.lastRead).toBeGreaterThanOrEqual(MOVING_MS);
              else if (!atAccept) expect(now - (e?.accepted ?? 0)).toBeGreaterThanOrEqual(NEW_MS);
            }
            live.delete(id);
            expect(t.has(id)).toBe(false);
          }
        };
        for (const o of ops) {
          if (o.kind === 'admit') {
            const id = next++;
            const decision = t.admit(id, o.key, now);
            if (decision.admitted) {
              evicted(decision.evict, undefined, true);
              live.set(id, { key: o.key, bytes: 0, lastRead: null, accepted: now });
            }
          } else if (o.kind === 'read' && live.size > 0) {
            const id = ids()[o.which % live.size] as number;
            const e = live.get(id) as { bytes: number; lastRead: number | null };
            const wasHeld = t.isHeld(id);
            e.bytes += o.bytes;
            e.lastRead = now;
            const heldBefore = ids().filter((other) => t.isHeld(other));
            const decision = t.read(id, e.bytes, o.hello, now);
            for (const v of decision.evict) {
              if (v.id !== id) expect(heldBefore).not.toContain(v.id);
            }
            evicted(decision.evict, id);
            if (wasHeld && live.has(id)) expect(decision.hold).toBe(true);
          } else if (o.kind === 'tick') {
            const held = ids().filter((id) => t.isHeld(id));
            const { evict } = t.tick(now);
            for (const v of evict) expect(held).not.toContain(v.id);
            evicted(evict);
            for (const id of t.resumable(now)) touch(id);
          } else if (o.kind === 'remove' && live.size > 0) {
            const id = ids()[o.which % live.size] as number;
            t.remove(id);
            live.delete(id);
            for (const r of t.resumable(now)) touch(r);
          } else if (o.kind === 'wait') {
            now += o.ms;
          }
          // Reservations within both byte budgets.
          expect(t.reserved).toBeLessThanOrEqual(l.maxPendingBytes);
          for (const key of ['a', 'b', 'c'])
            expect(t.reservedAt(key)).toBeLessThanOrEqual(l.maxPendingBytesPerAddress);
          // Every byte beyond the small allowance of a connection that is not held is reserved.
          const unreserved = ids()
            .filter((id) => !t.isHeld(id))
            .reduce(
              (sum, id) =>
                sum + Math.max(0, (live.get(id)?.bytes ?? 0) - Math.max(l.smallBytes, reservation)),
              0,
            );
          expect(unreserved).toBe(0);
          // The table's count of bytes is the sum of what its connections read.
          expect(t.bytes).toBe(ids().reduce((sum, id) => sum + (live.get(id)?.bytes ?? 0), 0));
          // Sockets: at most twice a budget between sweeps.
          expect(t.pending).toBeLessThanOrEqual(2 * l.maxPending);
        }
        // No one waits for a reservation that could be had.
        const stillHeld = ids().filter((id) => t.isHeld(id));
        expect(t.resumable(now)).toEqual([]);
        if (stillHeld.length > 0)
          expect(
            t.reserved + reservation > l.maxPendingBytes ||
              stillHeld.every(
                (id) => t.reservedAt(live.get(id)?.key ?? '') + reservation > l.maxPendingBytesPerAddress,
              ),
          ).toBe(true);
      }),
      { numRuns: RUNS },
    );
  });

  it('after a sweep, a socket budget is exceeded only by connections it may not evict', () => {
    fc.assert(
      fc.property(limits, fc.array(fc.constantFrom('a', 'b', 'c'), { maxLength: 40 }), (l, keys) => {
        const t = new AdmissionTable(l);
        keys.forEach((key, id) => {
          t.admit(id, key, 0);
        });
        // Nobody read: once NEW_MS is over, every connection may be evicted.
        t.tick(NEW_MS);
        expect(t.pending).toBeLessThanOrEqual(l.maxPending);
        for (const key of ['a', 'b', 'c'])
          expect(t.pendingAt(key)).toBeLessThanOrEqual(l.maxPendingPerAddress);
      }),
      { numRuns: RUNS },
    );
  });
});
