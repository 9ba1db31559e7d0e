import { describe, expect, it } from 'vitest';
import { parseCapabilityReport, readCapabilities } from '../../src/fleet/capabilities.js';
import {
  containmentFor,
  explain,
  makeRequirements,
  place,
  predicatesFor,
} from '../../src/fleet/placement.js';
import { HVT, NOW, report, row, SPT } from './fixtures.js';

const FRESH = { now: NOW, freshMs: 30_000 };

function reasons(r: ReturnType<typeof place>): Record<string, string[]> {
  if (r.ok) throw new Error(`expected a failure, placed on ${r.value.node}`);
  return r.error.details?.reasons as Record<string, string[]>;
}

describe('placement predicates', () => {
  it('hvt needs kvm and an hvt tender of the image ABI; networks need taps and each bridge', () => {
    expect(predicatesFor(HVT).map((p) => p.kind)).toEqual([
      'kvm',
      'tender',
      'taps',
      'bridge',
      'memory',
      'cpus',
    ]);
    expect(predicatesFor(SPT).map((p) => p.kind)).toEqual(['tender', 'memory', 'cpus']);
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
    ];
    const failed = place(rows, HVT, FRESH);
    expect(failed.ok).toBe(false);
    expect(reasons(failed)).toEqual({
      down: ['bridge service is down'],
      'gw-04': ['no kvm'],
      nonetadmin: ['no net admin (cannot create taps)'],
      notun: ['no tun'],
      old: ['no hvt tender with ABI version 2 (has 1)'],
      small: ['not enough memory (free 128 MiB, need 256 MiB)', 'not enough CPUs (free 0, need 1)'],
      tank: ['no bridge service'],
    });
    if (!failed.ok) {
      expect(failed.error.code).toBe('E_FLEET_NO_CAPABLE_NODE');
      expect(failed.error.message).toContain('\n  gw-04: no kvm\n');
      expect(failed.error.message).toContain('\n  tank: no bridge service');
    }
  });

  it('a node that reported nothing ({}) qualifies for nothing', () => {
    const empty = { id: 'blank', address: 'b:1', lastSeen: NOW, capabilities: {}, resources: {} };
    expect(reasons(place([empty], HVT, FRESH)).blank).toContain('no kvm');
    expect(reasons(place([empty], SPT, FRESH)).blank).toContain('no spt tender');
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
    expect(caps).toEqual({ kvm: false, tenders: [], tun: false, bridges: [], netAdmin: false });
  });

  it('stale nodes do not qualify', () => {
    const stale = place([row('late', report(), 31_000)], HVT, FRESH);
    expect(reasons(stale).late).toEqual(['stale (last seen 31 s ago, fresh window 30 s)']);
    expect(place([row('late', report(), 30_000)], HVT, FRESH).ok).toBe(true);
  });

  it('chooses the most free memory, ties by id', () => {
    const rows = [
      row('c', report({ memoryMiB: 2048 })),
      row('b', report({ memoryMiB: 8192 })),
      row('a', report({ memoryMiB: 8192 })),
      row('z', report({ memoryMiB: 65_536, kvm: false })),
    ];
    const placed = place(rows, HVT, FRESH);
    expect(placed.ok && placed.value.node).toBe('a');
  });

  it('honours --node only if it qualifies, and never substitutes another node', () => {
    const rows = [
      row('gw-04', report({ kvm: false })),
      row('big', report({ memoryMiB: 9000 })),
      row('web', report()),
    ];
    expect(place(rows, HVT, { ...FRESH, node: 'web' })).toMatchObject({ ok: true, value: { node: 'web' } });
    const refused = place(rows, HVT, { ...FRESH, node: 'gw-04' });
    expect(refused).toMatchObject({ ok: false, error: { code: 'E_FLEET_NODE_REFUSED' } });
    if (!refused.ok)
      expect(refused.error.message).toBe(
        'node gw-04 cannot run hvt (ABI 2, 256 MiB, 1 CPU, bridge service): no kvm',
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
      kvm: true,
      tenders: [{ kind: 'hvt', abi: 2 }],
      tun: true,
      netAdmin: true,
      bridges: [{ name: 'service', up: true }],
    });
    expect(containmentFor(SPT)).toEqual({ tenders: [{ kind: 'spt', abi: 2 }] });
  });

  it('explain lists every node in id order with its reasons', () => {
    const v = explain([row('b', report({ kvm: false })), row('a')], HVT, FRESH);
    expect(v.map((x) => [x.id, x.reasons])).toEqual([
      ['a', []],
      ['b', ['no kvm']],
    ]);
  });
});

describe('capability report shape', () => {
  it('accepts the probe shape and rejects a report missing a field', () => {
    expect(parseCapabilityReport(report()).ok).toBe(true);
    const { kvm: _, ...withoutKvm } = report();
    expect(parseCapabilityReport(withoutKvm)).toMatchObject({ ok: false, error: { code: 'E_FLEET_REPORT' } });
    expect(
      parseCapabilityReport({ ...report(), tenders: [{ kind: 'virtio', path: '/x', version: '', abi: 1 }] })
        .ok,
    ).toBe(false);
  });

  it('rejects a bridge listed twice', () => {
    const twice = report({
      bridges: [
        { name: 'service', up: false },
        { name: 'service', up: true },
      ],
    });
    expect(parseCapabilityReport(twice)).toMatchObject({ ok: false, error: { message: /repeats service/ } });
  });

  it('requirements are checked and bridges made a sorted set', () => {
    expect(makeRequirements({ ...HVT, bridges: ['b', 'a', 'b'] })).toMatchObject({
      ok: true,
      value: { bridges: ['a', 'b'] },
    });
    expect(makeRequirements({ ...HVT, memoryMiB: -1 }).ok).toBe(false);
  });
});
