// A process' resource usage from the text of /proc/<pid>/{stat,statm,status}, mapped onto the
// wire's Rusage and KinfoMem exactly as albatross-stats fills them on Linux (semantics §12.2).
// Pure: the caller reads the files (sample.ts), so captured text can be tested directly.

import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import type { KinfoMem, Rusage, Timeval } from '../wire/types.js';

export type ProcError = PetrelError<'E_STATS_PROC'>;

/** The three files as read, plus when the process started. */
export interface ProcText {
  readonly stat: string;
  readonly statm: string;
  readonly status: string;
  /** Change time of the `/proc/<pid>` directory: Albatross' kinfo `start` on Linux. */
  readonly start: Timeval;
}

export interface ProcessUsage {
  readonly rusage: Rusage;
  readonly kinfo: KinfoMem;
}

/** Albatross refuses shorter files (semantics §12.2). */
const MIN_STAT_FIELDS = 52;
const MIN_STATM_VALUES = 7;

/**
 * `sysconf(_SC_CLK_TCK)`: USER_HZ, fixed at 100 by the kernel ABI on every architecture Node
 * runs on (only alpha and ia64 used 1024).
 */
export const DEFAULT_CLOCK_TICKS = 100;

const UNSIGNED = /^\d+$/;

/**
 * The fields of a `stat` line, indexed by their 1-based number in proc(5). The command name
 * (field 2) may hold spaces and parentheses, so the line is split after its last `)`.
 */
export function statFields(text: string): Result<(n: number) => bigint, ProcError> {
  const close = text.lastIndexOf(')');
  const open = text.indexOf('(');
  if (open < 0 || close < open) return err('E_STATS_PROC', 'stat: no "(command)" field');
  const rest = text
    .slice(close + 1)
    .trim()
    .split(/\s+/u);
  const count = 2 + rest.length;
  if (count < MIN_STAT_FIELDS) {
    return err('E_STATS_PROC', `stat: ${count} fields, at least ${MIN_STAT_FIELDS} expected`);
  }
  // Only the unsigned counters below are ever asked for; a malformed one is an error, not 0.
  const bad = [10, 12, 14, 15, 23, 24, 36].find((n) => !UNSIGNED.test(rest[n - 3] ?? ''));
  if (bad !== undefined) {
    return err('E_STATS_PROC', `stat: field ${bad} is ${JSON.stringify(rest[bad - 3])}, not a count`);
  }
  return ok((n: number) => BigInt(rest[n - 3] as string));
}

/** The values of `statm` (size resident shared text lib data dt), in pages. */
export function statmValues(text: string): Result<readonly bigint[], ProcError> {
  const values = text.trim().split(/\s+/u);
  if (values.length < MIN_STATM_VALUES) {
    return err('E_STATS_PROC', `statm: ${values.length} values, at least ${MIN_STATM_VALUES} expected`);
  }
  const bad = values.find((v) => !UNSIGNED.test(v));
  if (bad !== undefined) return err('E_STATS_PROC', `statm: ${JSON.stringify(bad)} is not a count`);
  return ok(values.map((v) => BigInt(v)));
}

/**
 * A counter line of `status` (`voluntary_ctxt_switches:\t12`). Linux has printed both context
 * switch counters since 2.6.23; a kernel without one reports 0, as getrusage would.
 */
export function statusCounter(text: string, key: string): bigint {
  for (const line of text.split('\n')) {
    const colon = line.indexOf(':');
    if (colon < 0 || line.slice(0, colon) !== key) continue;
    const value = line.slice(colon + 1).trim();
    return UNSIGNED.test(value) ? BigInt(value) : 0n;
  }
  return 0n;
}

/** Clock ticks as a Timeval: seconds = T div H, microseconds = (T mod H) × 10^6 div H. */
export function ticksToTimeval(ticks: bigint, hz: number): Timeval {
  const h = BigInt(hz);
  return { seconds: ticks / h, microseconds: Number(((ticks % h) * 1_000_000n) / h) };
}

/** A nanosecond timestamp (as `stat(2)` with bigint gives it) as a Timeval. */
export function nanosToTimeval(ns: bigint): Timeval {
  return { seconds: ns / 1_000_000_000n, microseconds: Number((ns % 1_000_000_000n) / 1000n) };
}

/** The figures Albatross sends for a process, from its /proc text. */
export function processUsage(
  text: ProcText,
  hz: number = DEFAULT_CLOCK_TICKS,
): Result<ProcessUsage, ProcError> {
  const stat = statFields(text.stat);
  if (!stat.ok) return stat;
  const statm = statmValues(text.statm);
  if (!statm.ok) return statm;
  const field = stat.value;
  const utime = field(14);
  const stime = field(15);
  const rss = field(24);
  const rusage: Rusage = {
    utime: ticksToTimeval(utime, hz),
    stime: ticksToTimeval(stime, hz),
    // Albatross reports the current resident size here, in pages (not getrusage's peak in KiB).
    maxrss: rss,
    // Linux keeps no integral shared/data/stack sizes, block I/O counts, IPC message or signal
    // counts per process in /proc that Albatross reads: all 0, as Albatross sends them.
    ixrss: 0n,
    idrss: 0n,
    isrss: 0n,
    minflt: field(10),
    majflt: field(12),
    // Always 0 on current kernels (proc(5): "not maintained"), read anyway as Albatross does.
    nswap: field(36),
    inblock: 0n,
    outblock: 0n,
    msgsnd: 0n,
    msgrcv: 0n,
    nsignals: 0n,
    nvcsw: statusCounter(text.status, 'voluntary_ctxt_switches'),
    nivcsw: statusCounter(text.status, 'nonvoluntary_ctxt_switches'),
  };
  const pages = statm.value;
  const data = pages[5] as bigint;
  const kinfo: KinfoMem = {
    vsize: field(23),
    rss,
    tsize: pages[3] as bigint,
    // Linux has no separate stack size in statm: Albatross sends the data size for both.
    dsize: data,
    ssize: data,
    runtime: ((utime + stime) * 1_000_000n) / BigInt(hz),
    // No copy-on-write fault count on Linux.
    cow: 0,
    start: text.start,
  };
  return ok({ rusage, kinfo });
}
