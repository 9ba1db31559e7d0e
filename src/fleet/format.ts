// How nodes, placement verdicts and deployments are shown to operators: aligned text tables and
// the JSON of `petrel fleet nodes|explain|ls --json`. Pure.

import { readCapabilities, readResources, readTotals, type StoredCapabilities } from './capabilities.js';
import type { Assignment } from './deployment.js';
import type { Deployment } from './deployments.js';
import { describeRequirements, NOTHING_RESERVED, type NodeVerdict, type Reserved } from './placement.js';
import type { ReservationRecord, Snapshot } from './registry.js';

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

/** `hvt/2,spt/2`; `none` for --runtimes none; `-` for a report that says nothing. */
export function formatServes(caps: Pick<StoredCapabilities, 'runtimes' | 'serves'>): string {
  if (caps.runtimes === null) return '-';
  if (caps.runtimes.length === 0) return 'none';
  const served = caps.serves.map((s) => `${s.kind}/${s.abi}`).join(',');
  // Configured, but the probe found none of it usable.
  return served === '' ? `nothing (--runtimes ${caps.runtimes.join(',')})` : served;
}

function formatReserved(r: Reserved): string {
  return r.vms === 0 ? '-' : `${r.memoryMiB} MiB (${r.vms})`;
}

/** One object per node, the capabilities read as placement reads them (absent = false). */
export function nodesJson(
  snapshot: Snapshot,
  freshMs: number,
  reservations: readonly ReservationRecord[] = [],
) {
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
        free: readResources(n.resources),
        total: readTotals(n.resources),
        running: n.running ?? 0,
        reserved: n.reserved ?? NOTHING_RESERVED,
        reservations: reservations
          .filter((r) => r.node === n.id)
          .map((r) => ({
            vm: r.vm,
            memoryMiB: r.memoryMiB,
            at: r.at.toISOString(),
            expiresAt: r.expiresAt.toISOString(),
          })),
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
      formatServes(c),
      c.tenders.map((t) => `${t.kind}/${t.abi}`).join(',') || '-',
      c.kvm ? 'yes' : 'no',
      c.tun && c.netAdmin ? 'yes' : 'no',
      c.bridges.map((b) => (b.up ? b.name : `${b.name}(down)`)).join(',') || '-',
      String(n.free.cpus),
      n.total === null ? `${n.free.memoryMiB} MiB` : `${n.free.memoryMiB}/${n.total.memoryMiB} MiB`,
      String(n.running),
      formatReserved(n.reserved),
    ];
  });
  return table(
    [
      'ID',
      'ADDRESS',
      'SEEN',
      'STATE',
      'SERVES',
      'PROBED',
      'KVM',
      'TAPS',
      'BRIDGES',
      'CPUS',
      'FREE MEMORY',
      'UNIKERNELS',
      'RESERVED',
    ],
    rows,
  );
}

/** What `explain --json` shows per node. */
export function verdictsJson(verdicts: readonly NodeVerdict[]) {
  return verdicts.map((v) => ({ ...v, qualifies: v.reasons.length === 0 }));
}

export function formatVerdicts(verdicts: readonly NodeVerdict[]): string {
  if (verdicts.length === 0) return 'no nodes registered\n';
  const rows = verdicts.map((v) => [
    v.id,
    formatServes(v),
    `${v.available.memoryMiB} MiB, ${v.available.cpus} CPU${v.available.cpus === 1 ? '' : 's'}`,
    formatReserved(v.reserved),
    v.reasons.length === 0 ? 'ok' : v.reasons.join(', '),
  ]);
  return table(['NODE', 'SERVES', 'FREE', 'RESERVED', 'VERDICT'], rows);
}

/** What `ls --json` shows: each deployment as recorded (not its proofs) with its replicas. */
export function deploymentsJson(deployments: readonly Deployment[], assignments: readonly Assignment[]) {
  return {
    deployments: deployments.map(({ request: r, createdAt, removal }) => ({
      name: r.name,
      replicas: r.replicas,
      image: r.image,
      requirements: r.requirements,
      blockDevices: r.blockDevices,
      node: r.node,
      createdAt: createdAt.toISOString(),
      removedAt: removal === null ? null : removal.at.toISOString(),
      assignments: assignments
        .filter((a) => a.name === r.name)
        .map((a) => ({
          index: a.index,
          node: a.node,
          state: a.state,
          generation: a.generation,
          since: a.since.toISOString(),
          reason: a.reason,
        })),
    })),
  };
}

/** Per deployment, a line saying what was asked, then a row per replica. */
export function formatDeployments(
  deployments: readonly Deployment[],
  assignments: readonly Assignment[],
): string {
  if (deployments.length === 0) return 'no deployments\n';
  return deploymentsJson(deployments, assignments)
    .deployments.map((d) => {
      const copies = `${d.replicas} replica${d.replicas === 1 ? '' : 's'}`;
      const pin = d.node === null ? '' : `, pinned to node ${d.node}`;
      const blocks =
        d.blockDevices === 0 ? '' : `, ${d.blockDevices} block device${d.blockDevices === 1 ? '' : 's'}`;
      const what = `${copies} of image ${d.image.sha256.slice(0, 12)} (${d.image.size} bytes), ${describeRequirements(d.requirements)}${blocks}${pin}`;
      const when =
        d.removedAt === null
          ? `recorded ${d.createdAt}`
          : `removed ${d.removedAt}: each node destroys its copy, then the replicas are retired`;
      const rows = d.assignments.map((a) => [
        String(a.index),
        a.node ?? '-',
        a.state,
        String(a.generation),
        a.since,
        a.reason ?? '-',
      ]);
      const replicas =
        rows.length === 0
          ? '  no replicas\n'
          : table(['REPLICA', 'NODE', 'STATE', 'GENERATION', 'SINCE', 'REASON'], rows)
              .trimEnd()
              .split('\n')
              .map((line) => `  ${line}\n`)
              .join('');
      return `${d.name}: ${what}; ${when}\n${replicas}`;
    })
    .join('\n');
}
