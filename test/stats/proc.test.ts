// /proc text → Rusage and KinfoMem as Albatross fills them on Linux (semantics §12.2).
// Fixtures were captured on the build host, not written by hand: node-* from a Node process
// reading its own /proc/self/{stat,statm,status} (and the ctime of /proc/self, in ns) after
// some work; odd-* from a copy of sleep named "we ird) (x", for the command-name split.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  nanosToTimeval,
  processUsage,
  statFields,
  statmValues,
  statusCounter,
  ticksToTimeval,
} from '../../src/stats/proc.js';

const fixture = (name: string) => readFileSync(path.join(import.meta.dirname, 'fixtures', name), 'utf8');

const node = {
  stat: fixture('node-stat.txt'),
  statm: fixture('node-statm.txt'),
  status: fixture('node-status.txt'),
  start: nanosToTimeval(BigInt(fixture('node-ctime.txt').trim())),
};

describe('processUsage from captured /proc text', () => {
  it('maps stat, statm and status fields as Albatross does', () => {
    const usage = processUsage(node);
    expect(usage.ok).toBe(true);
    if (!usage.ok) return;
    const { rusage, kinfo } = usage.value;
    // stat fields 14, 15: 27 and 6 ticks at 100 Hz
    expect(rusage.utime).toEqual({ seconds: 0n, microseconds: 270_000 });
    expect(rusage.stime).toEqual({ seconds: 0n, microseconds: 60_000 });
    // fields 10, 12, 36; maxrss = rss in pages (field 24)
    expect(rusage.minflt).toBe(6745n);
    expect(rusage.majflt).toBe(0n);
    expect(rusage.nswap).toBe(0n);
    expect(rusage.maxrss).toBe(15535n);
    // status counters
    expect(rusage.nvcsw).toBe(1n);
    expect(rusage.nivcsw).toBe(197n);
    for (const zero of [
      'ixrss',
      'idrss',
      'isrss',
      'inblock',
      'outblock',
      'msgsnd',
      'msgrcv',
      'nsignals',
    ] as const)
      expect(rusage[zero]).toBe(0n);
    expect(kinfo).toEqual({
      vsize: 1031479296n, // field 23, bytes
      rss: 15535n, // field 24, pages
      tsize: 6802n, // statm 4th
      dsize: 16580n, // statm 6th
      ssize: 16580n, // statm 6th again
      runtime: 330_000n, // (27 + 6) ticks in µs
      cow: 0,
      start: { seconds: 1795971994n, microseconds: 732914 },
    });
  });

  it('splits the stat line after the last ")" so command names may hold spaces and parentheses', () => {
    const usage = processUsage({
      stat: fixture('odd-stat.txt'),
      statm: fixture('odd-statm.txt'),
      status: fixture('odd-status.txt'),
      start: { seconds: 1n, microseconds: 2 },
    });
    expect(usage.ok && usage.value.rusage.minflt).toBe(136n);
    expect(usage.ok && usage.value.kinfo.vsize).toBe(2990080n);
    expect(usage.ok && usage.value.kinfo.rss).toBe(420n);
    expect(usage.ok && usage.value.kinfo.tsize).toBe(5n);
    expect(usage.ok && usage.value.rusage.nivcsw).toBe(7n);
  });

  it('refuses a stat line of fewer than 52 fields and a statm of fewer than 7 values', () => {
    const short = node.stat.trim().split(' ').slice(0, 51).join(' ');
    expect(statFields(short)).toMatchObject({
      ok: false,
      error: { message: 'stat: 51 fields, at least 52 expected' },
    });
    expect(statFields(`${node.stat.trim()} 0`).ok).toBe(true);
    expect(statmValues('1 2 3 4 5 6')).toMatchObject({ ok: false, error: { code: 'E_STATS_PROC' } });
    expect(statFields('12 cat R 1')).toMatchObject({ ok: false });
  });

  it('refuses a counter it uses that is not a number, rather than reporting 0', () => {
    const fields = node.stat.trim().split(' ');
    fields[13] = 'x'; // field 14, utime
    expect(statFields(fields.join(' '))).toMatchObject({
      ok: false,
      error: { message: 'stat: field 14 is "x", not a count' },
    });
  });

  it('converts clock ticks with the tick rate given', () => {
    expect(ticksToTimeval(12345n, 100)).toEqual({ seconds: 123n, microseconds: 450_000 });
    expect(ticksToTimeval(1025n, 1024)).toEqual({ seconds: 1n, microseconds: 976 });
    const at1024 = processUsage(node, 1024);
    expect(at1024.ok && at1024.value.kinfo.runtime).toBe((33n * 1_000_000n) / 1024n);
  });

  it('reads status counters by exact key and reports 0 when one is missing', () => {
    expect(statusCounter(node.status, 'voluntary_ctxt_switches')).toBe(1n);
    expect(statusCounter('Name:\tx\n', 'voluntary_ctxt_switches')).toBe(0n);
  });
});
