// Reading one statistics sample (semantics §12.2): a tender's /proc files and its taps' counters,
// through injectable readers so tests can fake or count every read.

import { readFile, stat } from 'node:fs/promises';
import { runIp } from '../host/ip.js';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import type { Ifdata, StatsData } from '../wire/types.js';
import { linkIfdata, parseLinks } from './ifdata.js';
import {
  DEFAULT_CLOCK_TICKS,
  nanosToTimeval,
  type ProcError,
  type ProcessUsage,
  processUsage,
} from './proc.js';

/** Where /proc text and the process start time come from. */
export interface ProcReader {
  readText(file: string): Promise<string>;
  /** Change time of a file, in nanoseconds since the epoch. */
  changeTimeNs(file: string): Promise<bigint>;
}

export const fsProcReader: ProcReader = {
  readText: (file) => readFile(file, 'utf8'),
  changeTimeNs: async (file) => (await stat(file, { bigint: true })).ctimeNs,
};

/** The output of `ip -s -j link show` (every link, counters included), or why there is none. */
export type LinkReader = () => Promise<Result<string, PetrelError>>;

/** The real `ip`, inside `netns` when given. One run lists every tap, however many VMs. */
export function ipLinkReader(netns?: string): LinkReader {
  return async () => {
    const out = await runIp(['-s', '-j', 'link', 'show'], netns === undefined ? {} : { netns });
    return out.ok ? ok(out.value.stdout) : out;
  };
}

/** The links of one `ip` run by name, or why they could not be listed. */
export type LinkTable = Result<ReadonlyMap<string, unknown>, PetrelError>;

export async function readLinkTable(reader: LinkReader): Promise<LinkTable> {
  const out = await reader();
  return out.ok ? parseLinks(out.value) : out;
}

/** A unikernel's network attachment as the engine reports it. */
export interface TapAttachment {
  /** The unikernel-side interface name (the Ifdata's `bridge`). */
  readonly netif: string;
  readonly tap: string;
}

export interface TapCounters {
  /** One per readable tap, in **reverse** configuration order, as Albatross lists them. */
  readonly ifdata: readonly Ifdata[];
  /** Taps left out (Albatross leaves out taps it cannot resolve), with the reason. */
  readonly unresolved: readonly { readonly tap: string; readonly reason: string }[];
}

export function tapCounters(nets: readonly TapAttachment[], links: LinkTable): TapCounters {
  const ifdata: Ifdata[] = [];
  const unresolved: { tap: string; reason: string }[] = [];
  for (const net of [...nets].reverse()) {
    const link = links.ok ? links.value.get(net.tap) : undefined;
    const one: Result<Ifdata, PetrelError> =
      link !== undefined
        ? linkIfdata(link, net.netif)
        : links.ok
          ? err('E_STATS_LINK', 'no such link')
          : links;
    if (one.ok) ifdata.push(one.value);
    else unresolved.push({ tap: net.tap, reason: one.error.message });
  }
  return { ifdata, unresolved };
}

/** The figures of process `pid`; an error when it is gone or its files are unreadable. */
export async function readProcess(
  pid: number,
  reader: ProcReader,
  clockTicks: number = DEFAULT_CLOCK_TICKS,
): Promise<Result<ProcessUsage, ProcError>> {
  const dir = `/proc/${pid}`;
  let text: [string, string, string, bigint];
  try {
    text = await Promise.all([
      reader.readText(`${dir}/stat`),
      reader.readText(`${dir}/statm`),
      reader.readText(`${dir}/status`),
      reader.changeTimeNs(dir),
    ]);
  } catch (cause) {
    return err('E_STATS_PROC', `cannot read ${dir}: ${(cause as Error).message}`, { pid });
  }
  const [statText, statm, status, ctime] = text;
  const usage = processUsage({ stat: statText, statm, status, start: nanosToTimeval(ctime) }, clockTicks);
  return usage.ok ? usage : err('E_STATS_PROC', `${dir}: ${usage.error.message}`, { pid });
}

/** The wire's StatsData: on Linux no vmm-stats, and kinfo-mem always present. */
export function statsData(usage: ProcessUsage, taps: TapCounters): StatsData {
  return { rusage: usage.rusage, ifdata: taps.ifdata, vmmStats: null, kinfoMem: usage.kinfo };
}
