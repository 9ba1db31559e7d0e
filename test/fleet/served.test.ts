// Issue 16 with real petreld processes and real PostgreSQL: placement qualifies a node only on
// the runtimes it SERVES. `spt-node` and `none-node` find an hvt tender and KVM too (their probe
// lists them), and offer the most memory, so a placement that trusted the probe would choose
// them; only `hvt-node` may receive hvt images and only `spt-node` spt images.
import { expect, it } from 'vitest';
import { ABI_VERSION } from '../../src/tender/abi.js';
import { canaryImage, sptCanary } from '../engine/guest.js';
import { describeWithPostgres } from './pg.js';
import { countsOf, type RealFleet, withRealFleet } from './real-fleet.js';

const ALICE = ['--vms', '16', '--mem', '2048'];
const HVT = `hvt/${ABI_VERSION.hvt}`;
const SPT = `spt/${ABI_VERSION.spt}`;

/** `fleet create NAME IMAGE` of a canary that keeps running, as alice. */
const create = (fleet: RealFleet, name: string, image: string, ...more: string[]) =>
  fleet.fleet(['create', name, image, '--mem', '16', '--arg', 'wait', '--arg', name, ...more], 'alice');

describeWithPostgres('placement on served runtimes, real nodes', (pg) => {
  it('an spt-only node never receives an hvt image and vice versa; a --runtimes none node nothing', async () => {
    await withRealFleet(await pg.schema(), { alice: ALICE }, async (fleet) => {
      await Promise.all([
        fleet.start('hvt-node', { runtimes: 'hvt', offerMemory: 512 }),
        fleet.start('spt-node', { runtimes: 'spt', offerMemory: 1024 }),
        fleet.start('none-node', { runtimes: 'none', offerMemory: 2048 }),
      ]);
      // What each serves, next to what its probe found.
      const nodes = await fleet.fleet(['nodes']);
      expect(nodes.code, nodes.err).toBe(0);
      const line = (id: string) => nodes.out.split('\n').find((l) => l.startsWith(`${id} `)) ?? '';
      const columns = (id: string) => line(id).split(/\s{2,}/u);
      expect(columns('hvt-node')[4]).toBe(HVT);
      expect(columns('spt-node')[4]?.split(',')).toContain(SPT);
      expect(columns('spt-node')[4]).not.toContain('hvt');
      expect(columns('none-node')[4]).toBe('none');
      for (const id of ['spt-node', 'none-node']) {
        expect(columns(id)[5]?.split(',')).toEqual(expect.arrayContaining([HVT, SPT]));
        expect(columns(id)[6]).toBe('yes'); // kvm: the probe found it
      }

      const hvtNames = ['alice:h1', 'alice:h2', 'alice:h3'];
      const sptNames = ['alice:s1', 'alice:s2', 'alice:s3'];
      for (const [i, name] of hvtNames.entries()) {
        const made = await create(fleet, name, canaryImage);
        expect(made.code, made.err).toBe(0);
        expect(made.out).toContain(`${name} placed on hvt-node (`);
        const spt = await create(fleet, sptNames[i] as string, sptCanary);
        expect(spt.code, spt.err).toBe(0);
        expect(spt.out).toContain(`${sptNames[i]} placed on spt-node (`);
      }
      // The nodes' own reports (written after each change) say where each really runs.
      await fleet.untilReported([...hvtNames, ...sptNames]);
      const reported = await fleet.reported();
      expect(reported).toEqual({ 'hvt-node': hvtNames, 'none-node': [], 'spt-node': sptNames });
      expect(countsOf(reported, [...hvtNames, ...sptNames])).toEqual({
        'hvt-node': 3,
        'none-node': 0,
        'spt-node': 3,
      });
      // Landed: every reservation ended when its node reported the unikernel.
      await fleet.untilNoReservation();

      // explain says why for each node.
      const explained = await fleet.fleet(['explain', 'alice:h4', canaryImage, '--mem', '16']);
      expect(explained.code, explained.err).toBe(0);
      expect(explained.out).toMatch(/none-node\s+none\s.*hosts no unikernels \(--runtimes none\)\n/);
      expect(explained.out).toMatch(/spt-node\s.*does not run hvt unikernels \(--runtimes spt\)\n/);
      expect(explained.out).toMatch(new RegExp(`hvt-node\\s+${HVT}\\s+\\d+ MiB, \\d+ CPUs?\\s+-\\s+ok\\n`));
      expect(explained.out).toContain('choice: hvt-node (');

      // --node naming a node that does not qualify fails with its reason and creates nothing.
      const placementsBefore = await fleet.registry.placements();
      const none = await create(fleet, 'alice:n1', sptCanary, '--node', 'none-node');
      expect(none.code).toBe(1);
      expect(none.err).toContain('E_FLEET_NODE_REFUSED: node none-node cannot run spt');
      expect(none.err).toContain('hosts no unikernels (--runtimes none)');
      const wrong = await create(fleet, 'alice:n2', canaryImage, '--node', 'spt-node');
      expect(wrong.code).toBe(1);
      expect(wrong.err).toContain('node spt-node cannot run hvt');
      expect(wrong.err).toContain('does not run hvt unikernels (--runtimes spt)');
      const back = await create(fleet, 'alice:n3', sptCanary, '--node', 'hvt-node');
      expect(back.code).toBe(1);
      expect(back.err).toContain('does not run spt unikernels (--runtimes hvt)');
      expect(await fleet.reported()).toEqual(reported);
      expect(await fleet.registry.reservations()).toEqual({ ok: true, value: [] });
      const placementsAfter = await fleet.registry.placements();
      expect(placementsAfter.ok && placementsAfter.value.length).toBe(
        placementsBefore.ok && placementsBefore.value.length,
      );
    });
  }, 180_000);

  it('a node restarted with fewer runtimes replaces its report; a stale node does not qualify', async () => {
    await withRealFleet(await pg.schema(), { alice: ALICE }, async (fleet) => {
      const flex = await fleet.start('flex', { runtimes: 'hvt,spt', offerMemory: 1024 });
      const other = await fleet.start('other', { runtimes: 'spt', offerMemory: 256 });
      const first = await create(fleet, 'alice:h1', canaryImage);
      expect(first.code, first.err).toBe(0);
      expect(first.out).toContain('alice:h1 placed on flex (');

      await flex.restart({ runtimes: 'spt', offerMemory: 1024 });
      const row = await fleet.registry.nodes();
      const caps = row.ok ? row.value.nodes.find((n) => n.id === 'flex')?.capabilities : undefined;
      expect(caps).toMatchObject({ runtimes: ['spt'] });
      expect((caps as { serves: { kind: string }[] }).serves.map((s) => s.kind)).toEqual(['spt']);
      const refused = await create(fleet, 'alice:h2', canaryImage);
      expect(refused.code).toBe(1);
      expect(refused.err).toContain('E_FLEET_NO_CAPABLE_NODE');
      expect(refused.err).toContain('flex: does not run hvt unikernels (--runtimes spt)');
      expect(refused.err).toContain('other: does not run hvt unikernels (--runtimes spt)');
      const spt = await create(fleet, 'alice:s1', sptCanary);
      expect(spt.code, spt.err).toBe(0);
      expect(spt.out).toContain('alice:s1 placed on flex (');

      // flex stops answering (SIGSTOP: it neither reports nor withdraws) and goes stale.
      process.kill(flex.process.pid, 'SIGSTOP');
      try {
        await fleet.until(async () => {
          const age = await fleet.registry.nodes();
          const seen = age.ok ? age.value.nodes.find((n) => n.id === 'flex')?.lastSeen : undefined;
          return seen !== undefined && age.ok && age.value.now.getTime() - seen.getTime() > 2_500;
        }, 'flex older than the window');
        const stale = await create(fleet, 'alice:s2', sptCanary, '--fresh', '2');
        expect(stale.code, stale.err).toBe(0);
        expect(stale.out).toContain('alice:s2 placed on other (');
        const pinned = await create(fleet, 'alice:s3', sptCanary, '--fresh', '2', '--node', 'flex');
        expect(pinned.code).toBe(1);
        expect(pinned.err).toMatch(
          /node flex cannot run spt .*: stale \(last seen \d+\.\d s ago, fresh window 2 s\)/,
        );
      } finally {
        process.kill(flex.process.pid, 'SIGCONT');
      }
      expect(other.id).toBe('other');
    });
  }, 180_000);
});
