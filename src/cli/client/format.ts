// Human and JSON shapes of petreld's answers: aligned tables for listings, one line per console
// line or statistics sample. JSON uses the wire's JSON mapping (bigints as strings, bytes as hex).

import { printName } from '../../resources/name.js';
import { MAX_VMS, type Policy } from '../../resources/policy.js';
import { type Json, toJson } from '../../wire/json.js';
import type { BlockDevice, FailBehaviour, Name, Named, StatsData, UnikernelInfo } from '../../wire/types.js';

/** Columns padded to their widest cell, the last one not padded; `headers` null for none. */
export function table(headers: readonly string[] | null, rows: readonly (readonly string[])[]): string {
  const all = headers === null ? rows : [headers, ...rows];
  const widths = (all[0] ?? []).map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return `${all.map(line).join('\n')}\n`;
}

const dash = (items: readonly string[]): string => (items.length === 0 ? '-' : items.join(','));

function failText(fail: FailBehaviour): string {
  if (fail.kind === 'quit') return 'quit';
  return fail.exitCodes.length === 0 ? 'restart' : `restart on ${fail.exitCodes.join(',')}`;
}

/** Arguments as a shell would need them quoted. */
function quoteArgs(args: readonly string[] | null): string {
  if (args === null || args.length === 0) return '-';
  return args.map((a) => (/^[\w@%+=:,./-]+$/u.test(a) ? a : `'${a.replaceAll("'", `'\\''`)}'`)).join(' ');
}

export function formatUnikernels(entries: readonly Named<UnikernelInfo>[]): string {
  if (entries.length === 0) return 'no unikernels\n';
  const rows = entries.map(({ name, info }) => [
    printName(name),
    `${info.memory} MiB`,
    `${info.cpus}@${dash(info.cpuids.map(String))}`,
    dash(info.bridges.map((n) => `${n.bridge === n.netif ? n.netif : `${n.netif}:${n.bridge}`}@${n.mac}`)),
    dash(
      info.blocks.map(
        (b) =>
          `${b.device}${b.hostDevice === b.device ? '' : `:${b.hostDevice}`} ${b.blockSize} MiB/${b.sectorSize}`,
      ),
    ),
    failText(info.failBehaviour),
    info.started.toISOString().replace(/\.\d{3}Z$/u, 'Z'),
    Buffer.from(info.digest).toString('hex').slice(0, 12),
    quoteArgs(info.arguments),
  ]);
  return table(
    ['NAME', 'MEMORY', 'CPUS', 'NETWORKS', 'BLOCKS', 'ON FAILURE', 'STARTED', 'DIGEST', 'ARGUMENTS'],
    rows,
  );
}

export function unikernelsJson(entries: readonly Named<UnikernelInfo>[]): Json {
  return entries.map(({ name, info }) => ({
    name: printName(name),
    ...(toJson(info) as { [k: string]: Json }),
  }));
}

const vmsText = (vms: bigint): string => (vms === MAX_VMS ? 'unlimited' : String(vms));

export function formatPolicies(entries: readonly { name: Name; policy: Policy }[]): string {
  if (entries.length === 0) return 'no policies\n';
  const rows = entries.map(({ name, policy }) => [
    printName(name),
    vmsText(policy.vms),
    `${policy.memory} MiB`,
    dash(policy.cpuids.map(String)),
    policy.block === null ? '-' : `${policy.block} MiB`,
    dash(policy.bridges),
  ]);
  return table(['PATH', 'UNIKERNELS', 'MEMORY', 'CPUIDS', 'BLOCK', 'BRIDGES'], rows);
}

export function policiesJson(entries: readonly { name: Name; policy: Policy }[]): Json {
  return entries.map(({ name, policy }) => ({
    path: printName(name),
    ...(toJson(policy) as { [k: string]: Json }),
  }));
}

export function formatBlocks(entries: readonly BlockDevice[]): string {
  if (entries.length === 0) return 'no block devices\n';
  const rows = entries.map((b) => [printName(b.name), `${b.size} MiB`, b.active ? 'in use' : 'free']);
  return table(['NAME', 'SIZE', 'STATE'], rows);
}

export const blocksJson = (entries: readonly BlockDevice[]): Json => entries.map((b) => toJson(b));

// --- streams ----------------------------------------------------------------------------------

export function consoleLineText(timestamp: Date, line: Uint8Array): string {
  return `${timestamp.toISOString()} ${Buffer.from(line).toString('utf8')}\n`;
}

export function consoleLineJson(name: Name, timestamp: Date, line: Uint8Array): string {
  return `${JSON.stringify({ name: printName(name), timestamp: timestamp.toISOString(), line: toJson(line, 'line') })}\n`;
}

const seconds = (t: { seconds: bigint; microseconds: number }): string =>
  `${t.seconds}.${String(t.microseconds).padStart(6, '0').slice(0, 3)}s`;

const kib = (bytes: bigint): string => `${bytes / 1024n} KiB`;

/** One line per sample: CPU time, memory (kinfo when present), then each interface's counters. */
export function statsLine(at: Date, name: Name, stats: StatsData): string {
  const { rusage, kinfoMem } = stats;
  const parts = [
    at.toISOString().replace(/\.\d{3}Z$/u, 'Z'),
    printName(name),
    `user ${seconds(rusage.utime)}`,
    `sys ${seconds(rusage.stime)}`,
  ];
  // kinfo rss is in pages, vsize in bytes (semantics §12.2).
  if (kinfoMem !== null) parts.push(`rss ${kinfoMem.rss} pages`, `vsize ${kib(kinfoMem.vsize)}`);
  for (const i of stats.ifdata) {
    parts.push(
      `${i.bridge} rx ${i.inputPackets} pkts ${i.inputBytes} B tx ${i.outputPackets} pkts ${i.outputBytes} B`,
    );
  }
  return `${parts.join('  ')}\n`;
}

export function statsJson(at: Date, name: Name, stats: StatsData): string {
  return `${JSON.stringify({ at: at.toISOString(), name: printName(name), ...(toJson(stats) as { [k: string]: Json }) })}\n`;
}
