// Issue 16 with real petreld processes and real PostgreSQL: capacity reflects placements, so
// creates spread over equal nodes, concurrent creates never overcommit one, and a create refused
// by the first choice lands on the next. The nodes offer 1 GiB each (--offer-memory), which their
// root policy enforces, so a node that received too much would refuse.
import { expect, it } from 'vitest';
import { sptCanary } from '../engine/guest.js';
import { describeWithPostgres } from './pg.js';
import { countsOf, type RealFleet, withRealFleet } from './real-fleet.js';

const OFFER = 1024;
const MEM = 64;

const args = (name: string, ...more: string[]) => [
  'create',
  name,
  sptCanary,
  '--mem',
  String(MEM),
  '--arg',
  'wait',
  '--arg',
  name,
  ...more,
];

/** Free memory and listed unikernels as each node last reported them. */
async function freeMemory(fleet: RealFleet): Promise<Record<string, number>> {
  const nodes = await fleet.registry.nodes();
  if (!nodes.ok) throw new Error(nodes.error.message);
  return Object.fromEntries(
    nodes.value.nodes.map((n) => [n.id, (n.resources as { memoryMiB: number }).memoryMiB]),
  );
}

describeWithPostgres('spread and capacity, real nodes', (pg) => {
  it('six 64 MiB unikernels over two equal nodes split 3/3', async () => {
    await withRealFleet(await pg.schema(), { alice: ['--vms', '64', '--mem', '4096'] }, async (fleet) => {
      await Promise.all([
        fleet.start('a', { runtimes: 'spt', offerMemory: OFFER }),
        fleet.start('b', { runtimes: 'spt', offerMemory: OFFER }),
      ]);
      const six = Array.from({ length: 6 }, (_, i) => `alice:six${i}`);
      for (const name of six) {
        const made = await fleet.fleet(args(name), 'alice');
        expect(made.code, made.err).toBe(0);
        expect(made.out).not.toContain('refused it first');
      }
      await fleet.untilReported(six);
      expect(countsOf(await fleet.reported(), six)).toEqual({ a: 3, b: 3 });
      // Reported free memory is the root policy (--offer-memory) minus what runs.
      expect(await freeMemory(fleet)).toEqual({ a: OFFER - 3 * MEM, b: OFFER - 3 * MEM });
      await fleet.untilNoReservation();
    });
  }, 180_000);

  it('20 concurrent creates over two nodes never overcommit either and split within ±2', async () => {
    // c has room for 13, d for 12. Placements that did not see each other's reservations would
    // all choose c (it has more free memory) until its reports caught up, and c would refuse
    // the 14th.
    const room = { c: 13, d: 12 };
    await withRealFleet(await pg.schema(), { alice: ['--vms', '64', '--mem', '4096'] }, async (fleet) => {
      await Promise.all([
        fleet.start('c', { runtimes: 'spt', offerMemory: room.c * MEM }),
        fleet.start('d', { runtimes: 'spt', offerMemory: room.d * MEM }),
      ]);
      const twenty = Array.from({ length: 20 }, (_, i) => `alice:burst${i}`);
      // Twenty separate `petrel fleet create` processes at once.
      const outcomes = await Promise.all(twenty.map((name) => fleet.fleetProcess(args(name), 'alice')));
      for (const o of outcomes) {
        expect(o.code, o.err).toBe(0);
        // Each landed on its first choice: the placer never chose a node without room.
        expect(o.out).not.toContain('refused it first');
      }
      const landed = outcomes.map((o) => /placed on (\w+) \(/u.exec(o.out)?.[1]);
      await fleet.untilReported(twenty);
      const counts = countsOf(await fleet.reported(), twenty);
      // The replies say where each landed, and the nodes agree.
      expect(counts).toEqual({
        c: landed.filter((n) => n === 'c').length,
        d: landed.filter((n) => n === 'd').length,
      });
      expect(Math.abs((counts.c ?? 0) - 10)).toBeLessThanOrEqual(2);
      expect(Math.abs((counts.d ?? 0) - 10)).toBeLessThanOrEqual(2);
      const free = await freeMemory(fleet);
      for (const id of ['c', 'd'] as const) {
        expect(counts[id] ?? 0).toBeLessThanOrEqual(room[id]);
        expect(free[id]).toBe((room[id] - (counts[id] ?? 0)) * MEM);
      }
      // Every reservation ended: each unikernel is counted once, in its node's report.
      await fleet.untilNoReservation();
    });
  }, 240_000);

  it('a create refused by the first choice lands on the second, and the reply says so', async () => {
    // carol may run one unikernel per node: her policy, which the registry cannot see.
    await withRealFleet(await pg.schema(), { carol: ['--vms', '1', '--mem', '512'] }, async (fleet) => {
      await Promise.all([
        fleet.start('roomy', { runtimes: 'spt', offerMemory: 2 * OFFER }),
        fleet.start('small', { runtimes: 'spt', offerMemory: OFFER }),
      ]);
      const one = await fleet.fleet(args('carol:one', '--node', 'roomy'), 'carol');
      expect(one.code, one.err).toBe(0);
      // roomy still has the most free memory, so it is chosen first, and refuses.
      const two = await fleet.fleet(args('carol:two'), 'carol');
      expect(two.code, two.err).toBe(0);
      expect(two.out).toMatch(/^created unikernel\ncarol:two placed on small \(127\.0\.0\.1:\d+\), /u);
      expect(two.out).toContain('\n  roomy refused it first: maximum amount of unikernels (1) reached\n');
      await fleet.until(async () => {
        const reported = await fleet.reported();
        return (
          reported.small?.includes('carol:two') === true && reported.roomy?.includes('carol:one') === true
        );
      }, 'the nodes report carol:one and carol:two');
      expect(await fleet.reported()).toEqual({ roomy: ['carol:one'], small: ['carol:two'] });
      const trail = await fleet.registry.placements();
      expect(trail.ok && trail.value.map((p) => [p.vm, p.node])).toEqual([
        ['carol:two', 'small'],
        ['carol:one', 'roomy'],
      ]);

      // Both refuse now: the error names each node tried with its reason, nothing is left held.
      const three = await fleet.fleet(args('carol:three'), 'carol');
      expect(three.code).toBe(1);
      expect(three.err).toContain(
        'E_FLEET_CREATE_FAILED: carol:three was not created: roomy, small refused it and no other node qualifies',
      );
      for (const node of ['roomy', 'small'])
        expect(three.err).toContain(
          `\n  ${node}: refused this create: maximum amount of unikernels (1) reached`,
        );
      expect(await fleet.registry.reservations()).toEqual({ ok: true, value: [] });
      expect(await fleet.reported()).toEqual({ roomy: ['carol:one'], small: ['carol:two'] });
    });
  }, 180_000);
});
