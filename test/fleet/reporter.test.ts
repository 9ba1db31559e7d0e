import { expect, it } from 'vitest';
import { type CapabilityReport, NO_CAPABILITIES, type NodeCapacity } from '../../src/fleet/capabilities.js';
import { Registry } from '../../src/fleet/registry.js';
import { createReporter, type FleetReporter, type ReporterOptions } from '../../src/fleet/reporter.js';
import { until } from '../engine/harness.js';
import { capacity, HVT, report } from './fixtures.js';
import { describeWithPostgres } from './pg.js';

function reporter(options: ReporterOptions): FleetReporter {
  const created = createReporter(options);
  if (!created.ok) throw new Error(created.error.message);
  return created.value;
}

const within5s = (condition: () => Promise<boolean>) => until(condition, 5_000);

describeWithPostgres('fleet reporter', (pg) => {
  it('reports at start and on every heartbeat; a capability lost between reports disappears', async () => {
    const { pool } = await pg.schema();
    const registry = new Registry(pool);
    const before = report();
    let current: CapabilityReport = before;
    // Reports never overlap: the completed-report count when the first probe that saw the
    // change began. A heartbeat already under way at the change probed the old report and
    // must not count; the one that began after it is done once `reports` passes this mark.
    let changedAt: number | null = null;
    const r: FleetReporter = reporter({
      registry,
      nodeId: 'gw-04',
      address: '127.0.0.1:1025',
      probe: async () => {
        if (current !== before && changedAt === null) changedAt = r.reports;
        return current;
      },
      runtimes: ['hvt'],
      heartbeatMs: 50,
    });
    try {
      expect(await r.start()).toEqual({ ok: true, value: undefined });
      expect(await registry.place(HVT, { freshMs: 30_000 })).toMatchObject({
        ok: true,
        value: { node: 'gw-04' },
      });
      current = report({ kvm: false });
      await within5s(async () => changedAt !== null && r.reports > changedAt);
      const placed = await registry.place(HVT, { freshMs: 30_000 });
      expect(placed).toMatchObject({ ok: false, error: { code: 'E_FLEET_NO_CAPABLE_NODE' } });
      if (!placed.ok)
        expect(placed.error.message).toContain(
          'gw-04: does not serve hvt now (--runtimes hvt, but the probe found no kvm)',
        );
    } finally {
      await r.stop();
    }
  });

  it('writes the served runtimes and the capacity it is given, and withdraws on stop', async () => {
    const { pool } = await pg.schema();
    const registry = new Registry(pool);
    const r = reporter({
      registry,
      nodeId: 'tank',
      address: '[::1]:1025',
      probe: async () => report(),
      runtimes: ['spt'],
      capacity: () => capacity(report(), 3072, ['user:a']),
    });
    expect((await r.start()).ok).toBe(true);
    const row = async () =>
      (await pool.query(`SELECT capabilities, resources, unikernels FROM nodes WHERE id = 'tank'`)).rows[0];
    expect(await row()).toMatchObject({
      capabilities: { runtimes: ['spt'], serves: [{ kind: 'spt', abi: 2 }], tenders: report().tenders },
      resources: { cpus: 4, memoryMiB: 3072 },
      unikernels: ['user:a'],
    });
    await r.stop();
    // Withdrawn: the row reads as a host that reported nothing.
    expect(await row()).toEqual({
      capabilities: NO_CAPABILITIES,
      resources: {
        cpus: 0,
        memoryMiB: 0,
        vms: 0,
        blockStorageMiB: 0,
        total: { memoryMiB: 0, vms: 0, blockStorageMiB: 0 },
      },
      unikernels: [],
    });
    expect(await r.reportNow()).toMatchObject({ ok: false, error: { code: 'E_FLEET_STOPPED' } });
  });

  it('after changes it re-sends the capacity without probing, coalesced to one write per interval', async () => {
    const { pool } = await pg.schema();
    const registry = new Registry(pool);
    let probes = 0;
    let current: NodeCapacity = capacity(report(), 4096);
    const r = reporter({
      registry,
      nodeId: 'busy',
      address: 'busy:1025',
      probe: async () => {
        probes += 1;
        return report();
      },
      runtimes: ['hvt', 'spt'],
      capacity: () => current,
      heartbeatMs: 3_600_000,
      changeIntervalMs: 200,
    });
    try {
      expect((await r.start()).ok).toBe(true);
      const free = async () =>
        (await pool.query(`SELECT resources, unikernels FROM nodes WHERE id = 'busy'`)).rows[0];
      const began = performance.now();
      // A burst of 50 changes: the last one is what the registry ends up with.
      for (let i = 1; i <= 50; i++) {
        current = capacity(
          report(),
          4096 - 64 * i,
          Array.from({ length: i }, (_, k) => `vm${k}`),
        );
        r.changed();
      }
      await within5s(async () => (await free()).resources.memoryMiB === 4096 - 64 * 50);
      expect((await free()).unikernels).toHaveLength(50);
      // One write for the whole burst (the first change after the report waits out the interval).
      expect(r.capacityWrites).toBe(1);
      expect(performance.now() - began).toBeGreaterThanOrEqual(150);
      current = capacity(report(), 1024, ['vm0']);
      r.changed();
      r.changed();
      await within5s(async () => (await free()).resources.memoryMiB === 1024);
      expect(r.capacityWrites).toBe(2);
      expect(probes).toBe(1);
    } finally {
      await r.stop();
    }
  });

  it('a probe that fails withdraws the report instead of leaving the old one', async () => {
    const { pool } = await pg.schema();
    const registry = new Registry(pool);
    let fail = false;
    const r = reporter({
      registry,
      nodeId: 'flaky',
      address: 'flaky:1025',
      probe: async () => {
        if (fail) throw new Error('cannot open /dev/kvm');
        return report();
      },
      runtimes: ['hvt'],
    });
    try {
      expect((await r.start()).ok).toBe(true);
      fail = true;
      expect(await r.reportNow()).toMatchObject({ ok: false, error: { code: 'E_FLEET_PROBE' } });
      const placed = await registry.place(HVT, { freshMs: 30_000 });
      expect(placed.ok).toBe(false);
    } finally {
      await r.stop({ withdraw: false });
    }
  });

  it('a registry that cannot be reached is a value at start, and heartbeats go on', async () => {
    const calls: string[] = [];
    const r = reporter({
      registry: {
        report: async () => {
          calls.push('report');
          return { ok: false, error: { code: 'E_FLEET_DB', message: 'connection refused' } };
        },
        withdraw: async () => ({ ok: true, value: undefined }),
        updateCapacity: async () => ({ ok: true, value: false }),
      },
      nodeId: 'lonely',
      address: 'lonely:1025',
      probe: async () => report(),
      runtimes: ['hvt'],
      heartbeatMs: 20,
    });
    expect(await r.start()).toMatchObject({ ok: false, error: { code: 'E_FLEET_DB' } });
    await within5s(async () => calls.length >= 3);
    await r.stop();
  });
});

it('checks the node id, address and heartbeat it is given', () => {
  const done = async () => ({ ok: true as const, value: undefined });
  const base = {
    registry: {
      report: done,
      withdraw: done,
      updateCapacity: async () => ({ ok: true as const, value: true }),
    },
    probe: async () => report(),
    runtimes: ['hvt' as const],
  };
  expect(createReporter({ ...base, nodeId: 'gw-04', address: '10.0.0.4:1025' }).ok).toBe(true);
  expect(createReporter({ ...base, nodeId: 'GW 04', address: '10.0.0.4:1025' })).toMatchObject({
    ok: false,
    error: { code: 'E_FLEET_NODE_ID' },
  });
  expect(createReporter({ ...base, nodeId: 'gw', address: '10.0.0.4' })).toMatchObject({
    ok: false,
    error: { code: 'E_FLEET_NODE_ADDRESS' },
  });
  expect(createReporter({ ...base, nodeId: 'gw', address: 'h:70000' }).ok).toBe(false);
  expect(createReporter({ ...base, nodeId: 'gw', address: 'h:1', heartbeatMs: 0 }).ok).toBe(false);
  expect(createReporter({ ...base, nodeId: 'gw', address: 'h:1', changeIntervalMs: -1 }).ok).toBe(false);
});
