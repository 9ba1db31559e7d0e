// How nodes and placement verdicts are shown to operators: aligned text tables and the JSON of
// `petrel fleet nodes --json`. Pure.

import { readCapabilities, readResources } from './capabilities.js';
import type { NodeVerdict } from './placement.js';
import type { Snapshot } from './registry.js';

function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return `${[header, ...rows].map(line).join('\n')}\n`;
}

function age(ms: number): string {
  if (ms < 0) return 'just now';
  if (ms < 120_000) return `${Math.round(ms / 1000)}s ago`;
  if (ms < 7_200_000) return `${Math.round(ms / 60_000)}m ago`;
  return `${Math.round(ms / 3_600_000)}h ago`;
}

/** One object per node, the capabilities read as placement reads them (absent = false). */
export function nodesJson(snapshot: Snapshot, freshMs: number) {
  return {
    now: snapshot.now.toISOString(),
    freshMs,
    nodes: snapshot.nodes.map((n) => {
      const ageMs = snapshot.now.getTime() - n.lastSeen.getTime();
      return {
        id: n.id,
        address: n.address,
        lastSeen: n.lastSeen.toISOString(),
        ageMs,
        fresh: ageMs <= freshMs,
        capabilities: readCapabilities(n.capabilities),
        resources: readResources(n.resources),
      };
    }),
  };
}

export function formatNodes(snapshot: Snapshot, freshMs: number): string {
  if (snapshot.nodes.length === 0) return 'no nodes registered\n';
  const rows = nodesJson(snapshot, freshMs).nodes.map((n) => {
    const c = n.capabilities;
    return [
      n.id,
      n.address,
      age(n.ageMs),
      n.fresh ? 'fresh' : 'stale',
      c.kvm ? 'yes' : 'no',
      c.tenders.map((t) => `${t.kind}/${t.abi}`).join(',') || '-',
      c.tun && c.netAdmin ? 'yes' : 'no',
      c.bridges.map((b) => (b.up ? b.name : `${b.name}(down)`)).join(',') || '-',
      String(n.resources.cpus),
      `${n.resources.memoryMiB} MiB`,
    ];
  });
  return table(
    ['ID', 'ADDRESS', 'SEEN', 'STATE', 'KVM', 'TENDERS', 'TAPS', 'BRIDGES', 'CPUS', 'FREE MEMORY'],
    rows,
  );
}

export function formatVerdicts(verdicts: readonly NodeVerdict[]): string {
  if (verdicts.length === 0) return 'no nodes registered\n';
  const rows = verdicts.map((v) => [
    v.id,
    v.reasons.length === 0 ? `ok (free ${v.free.memoryMiB} MiB, ${v.free.cpus} CPUs)` : v.reasons.join(', '),
  ]);
  return table(['NODE', 'VERDICT'], rows);
}
