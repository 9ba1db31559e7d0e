import { describe, expect, it } from 'vitest';
import {
  NO_CAPABILITIES,
  parseNodeReport,
  readCapabilities,
  servedRuntimes,
} from '../../src/fleet/capabilities.js';
import {
  containmentFor,
  explain,
  makeRequirements,
  type NodeRow,
  place,
  predicatesFor,
  spreadKey,
  tieKey,
} from '../../src/fleet/placement.js';
import { HVT, NOW, report, row, SPT } from './fixtures.js';

const FRESH = { now: NOW, freshMs: 30_000 };

function reasons(r: ReturnType<typeof place>): Record<string, string[]> {
  if (r.ok) throw new Error(`expected a failure, placed on ${r.value.node}`);
  return r.error.details?.reasons as Record<string, string[]>;
}

describe('placement predicates', () => {
  it('the runtime served at the image ABI; networks need taps and each bridge; then capacity', () => {
    expect(predicatesFor(HVT).map((p) => p.kind)).toEqual([
      'serves',
      'taps',
      'bridge',
      'memory',
      'vms',
      'cpus',
    ]);
    expect(predicatesFor(SPT).map((p) => p.kind)).toEqual(['serves', 'memory', 'vms', 'cpus']);
  });

  it('names what each node lacks, one line per node', () => {
    const rows = [
      row('gw-04', report({ kvm: false })),
      row('tank', report({ bridges: [] })),
      row('old', report({ tenders: [{ kind: 'hvt', path: '/t', version: 'v', abi: 1 }] })),
      row('down', report({ bridges: [{ name: 'service', up: false }] })),
      row('small', report({ memoryMiB: 128, cpus: 0 })),
      row('notun', report({ tun: false })),
      row('nonetadmin', report({ netAdmin: false })),
      row('sptonly', report({ runtimes: ['spt'] })),
      row('blind', report({ runtimes: [] })),
      row('notender', report({ tenders: [] })),
    ];
    const failed = place(rows, HVT, FRESH);
    expect(failed.ok).toBe(false);
    expect(reasons(failed)).toEqual({
      blind: ['hosts no unikernels (--runtimes none)'],
      down: ['bridge service is down'],
      'gw-04': ['does not serve hvt now (--runtimes hvt,spt, but the probe found no kvm)'],
      nonetadmin: ['no net admin (cannot create taps)'],
      notender: ['does not serve hvt now (--runtimes hvt,spt, but the probe found no hvt tender)'],
      notun: ['no tun'],
      old: ['serves hvt with ABI version 1, not 2'],
      small: ['not enough memory (free 128 MiB, need 256 MiB)', 'not enough CPUs (has 0, need 1)'],
      sptonly: ['does not run hvt unikernels (--runtimes spt)'],
      tank: ['no bridge service'],
    });
    if (!failed.ok) {
      expect(failed.error.code).toBe('E_FLEET_NO_CAPABLE_NODE');
      expect(failed.error.message).toContain('\n  blind: hosts no unikernels (--runtimes none)\n');
      expect(failed.error.message).toContain('\n  tank: no bridge service');
    }
  });

  it('serves only the configured runtimes the probe found usable, at each ABI found', () => {
    const both = report({
      tenders: [
        { kind: 'hvt', path: '/h', version: 'v', abi: 2 },
        { kind: 'spt', path: '/p', version: 'v', abi: 1001 },
        { kind: 'spt', path: '/s', version: 'v', abi: 2 },
      ],
    });
    expect(servedRuntimes(both, ['hvt', 'spt'])).toEqual([
      { kind: 'hvt', abi: 2 },
      { kind: 'spt', abi: 1001 },
      { kind: 'spt', abi: 2 },
    ]);
    expect(servedRuntimes(both, ['spt'])).toEqual([
      { kind: 'spt', abi: 1001 },
      { kind: 'spt', abi: 2 },
    ]);
    expect(servedRuntimes({ ...both, kvm: false }, ['hvt'])).toEqual([]);
    expect(servedRuntimes(both, [])).toEqual([]);
    // What the probe found beyond --runtimes never qualifies the node.
    const spt = place([row('spt-node', report({ runtimes: ['spt'] }))], HVT, FRESH);
    expect(reasons(spt)['spt-node']).toEqual(['does not run hvt unikernels (--runtimes spt)']);
    expect(place([row('spt-node', report({ runtimes: ['spt'] }))], SPT, FRESH).ok).toBe(true);
  });

  it('capacity is the reported free memory minus reservations, and a unikernel slot', () => {
    const held = row('held', report({ memoryMiB: 512 }), 1_000, { memoryMiB: 384, vms: 3 });
    const r = reasons(place([held], HVT, FRESH));
    expect(r.held).toEqual(['not enough memory (free 128 MiB, 384 MiB reserved, need 256 MiB)']);
    const full: NodeRow = {
      ...row('full'),
      resources: { memoryMiB: 4096, vms: 0, cpus: 4, blockStorageMiB: 0 },
    };
    expect(reasons(place([full], HVT, FRESH)).full).toEqual(['no unikernel slot left (free 0)']);
    const v = explain([held], HVT, FRESH)[0];
    expect(v?.available.memoryMiB).toBe(128);
    expect(v?.free.memoryMiB).toBe(512);
  });

  it('a node that refused this create does not qualify again, and says what it answered', () => {
    const rows = [row('a'), row('b', report({ memoryMiB: 1024 }))];
    const refused = new Map([['a', 'Unikernel with same name is already running']]);
    expect(place(rows, HVT, { ...FRESH, refused })).toMatchObject({ ok: true, value: { node: 'b' } });
    const both = new Map([...refused, ['b', 'policy says no']]);
    expect(reasons(place(rows, HVT, { ...FRESH, refused: both }))).toEqual({
      a: ['refused this create: Unikernel with same name is already running'],
      b: ['refused this create: policy says no'],
    });
  });

  it('a node that reported nothing ({}) qualifies for nothing', () => {
    const empty = { id: 'blank', address: 'b:1', lastSeen: NOW, capabilities: {}, resources: {} };
    const nothing = 'serves no runtime (its report is empty: it stopped, or its probe failed)';
    expect(reasons(place([empty], HVT, FRESH)).blank).toContain(nothing);
    expect(reasons(place([empty], SPT, FRESH)).blank).toContain(nothing);
    const none = makeRequirements({ runtime: 'spt', abi: 2, bridges: [], memoryMiB: 0, cpus: 0 });
    expect(none.ok && place([empty], none.value, FRESH).ok).toBe(false);
  });

  it('only true counts: truthy or mistyped values in a stored report are absent', () => {
    const caps = readCapabilities({
      kvm: 'yes',
      tun: 1,
      tenders: [{ kind: 'hvt', abi: '2' }],
      bridges: ['service'],
    });
    expect(caps).toEqual(NO_CAPABILITIES);
    expect(NO_CAPABILITIES).toMatchObject({ kvm: false, tenders: [], runtimes: null, serves: [] });
    expect(readCapabilities({ runtimes: ['hvt', 'kvm'], serves: [{ kind: 'hvt', abi: '2' }] })).toMatchObject(
      {
        runtimes: ['hvt'],
        serves: [],
      },
    );
  });

  it('stale nodes do not qualify', () => {
    const stale = place([row('late', report(), 31_000)], HVT, FRESH);
    expect(reasons(stale).late).toEqual(['stale (last seen 31 s ago, fresh window 30 s)']);
    expect(place([row('late', report(), 30_000)], HVT, FRESH).ok).toBe(true);
  });

  it('chooses the most free memory after reservations', () => {
    const rows = [
      row('c', report({ memoryMiB: 2048 })),
      row('b', report({ memoryMiB: 8192 }), 1_000, { memoryMiB: 4096, vms: 1 }),
      row('a', report({ memoryMiB: 4096 })),
      row('z', report({ memoryMiB: 65_536, kvm: false })),
    ];
    const placed = place(rows, HVT, FRESH);
    expect(placed).toMatchObject({ ok: true, value: { node: 'a', memoryAfterMiB: 4096 - 256 } });
  });

  it('ties go to the smallest hash of the unikernel name and node id: equal nodes take turns', () => {
    const ids = ['a', 'b', 'c', 'd'];
    const rows = ids.map((id) => row(id));
    const chosen = new Set<string>();
    for (let i = 0; i < 40; i++) {
      const vm = `user:vm${i}`;
      const placed = place(rows, HVT, { ...FRESH, vm });
      if (!placed.ok) throw new Error(placed.error.message);
      const expected = [...ids].sort(
        (x, y) => tieKey(spreadKey(x), spreadKey(vm)) - tieKey(spreadKey(y), spreadKey(vm)),
      )[0];
      expect(placed.value.node).toBe(expected);
      chosen.add(placed.value.node);
    }
    expect(chosen.size).toBeGreaterThan(1);
  });

  it('honours --node only if it qualifies, and never substitutes another node', () => {
    const rows = [
      row('gw-04', report({ runtimes: ['spt'] })),
      row('big', report({ memoryMiB: 9000 })),
      row('web', report()),
    ];
    expect(place(rows, HVT, { ...FRESH, node: 'web' })).toMatchObject({ ok: true, value: { node: 'web' } });
    const refused = place(rows, HVT, { ...FRESH, node: 'gw-04' });
    expect(refused).toMatchObject({ ok: false, error: { code: 'E_FLEET_NODE_REFUSED' } });
    if (!refused.ok)
      expect(refused.error.message).toBe(
        'node gw-04 cannot run hvt (ABI 2, 256 MiB, 1 CPU, bridge service): does not run hvt unikernels (--runtimes spt)',
      );
    expect(place(rows, HVT, { ...FRESH, node: 'nope' })).toMatchObject({
      ok: false,
      error: { code: 'E_FLEET_NODE_UNKNOWN' },
    });
  });

  it('fails with no nodes at all', () => {
    const r = place([], HVT, FRESH);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error.message).toMatch(/no node is registered/);
  });

  it('the SQL containment document is what a capable report contains', () => {
    expect(containmentFor(HVT)).toEqual({
      serves: [{ kind: 'hvt', abi: 2 }],
      tun: true,
      netAdmin: true,
      bridges: [{ name: 'service', up: true }],
    });
    expect(containmentFor(SPT)).toEqual({ serves: [{ kind: 'spt', abi: 2 }] });
  });

  it('explain lists every node in id order with its reasons', () => {
    const v = explain([row('b', report({ runtimes: [] })), row('a')], HVT, FRESH);
    expect(v.map((x) => [x.id, x.reasons])).toEqual([
      ['a', []],
      ['b', ['hosts no unikernels (--runtimes none)']],
    ]);
  });
});

describe('capability report shape', () => {
  it('accepts the probe shape with --runtimes and rejects a report missing a field', () => {
    expect(parseNodeReport(report()).ok).toBe(true);
    const { kvm: _, ...withoutKvm } = report();
    expect(parseNodeReport(withoutKvm)).toMatchObject({ ok: false, error: { code: 'E_FLEET_REPORT' } });
    const { runtimes: __, ...withoutRuntimes } = report();
    expect(parseNodeReport(withoutRuntimes)).toMatchObject({ ok: false, error: { message: /runtimes/ } });
    expect(parseNodeReport({ ...report(), runtimes: ['hvt', 'hvt'] }).ok).toBe(false);
    expect(
      parseNodeReport({ ...report(), tenders: [{ kind: 'virtio', path: '/x', version: '', abi: 1 }] }).ok,
    ).toBe(false);
  });

  it('rejects a bridge listed twice', () => {
    const twice = report({
      bridges: [
        { name: 'service', up: false },
        { name: 'service', up: true },
      ],
    });
    expect(parseNodeReport(twice)).toMatchObject({ ok: false, error: { message: /repeats service/ } });
  });

  it('requirements are checked and bridges made a sorted set', () => {
    expect(makeRequirements({ ...HVT, bridges: ['b', 'a', 'b'] })).toMatchObject({
      ok: true,
      value: { bridges: ['a', 'b'] },
    });
    expect(makeRequirements({ ...HVT, memoryMiB: -1 }).ok).toBe(false);
  });
});
