// Codec for statistics data (albatross-wire.md §4.12): rusage, interface counters, the FreeBSD
// vmm counters and kinfo-mem, the one IMPLICIT tag of the grammar.

import { ctx, type Der, enc, type Reader } from './der.js';
import type { Ifdata, KinfoMem, Rusage, StatsData, Timeval } from './types.js';

const readTimeval = (r: Reader): Timeval =>
  r.sequence((s) => ({ seconds: s.int64('seconds'), microseconds: s.int('microseconds') }));

const encTimeval = (t: Timeval): Der => enc.sequence([enc.int64(t.seconds), enc.integer(t.microseconds)]);

/** The int64 counters of Rusage after utime and stime, in wire order. */
const RUSAGE_COUNTERS = [
  'maxrss',
  'ixrss',
  'idrss',
  'isrss',
  'minflt',
  'majflt',
  'nswap',
  'inblock',
  'outblock',
  'msgsnd',
  'msgrcv',
  'nsignals',
  'nvcsw',
  'nivcsw',
] as const;

function readRusage(r: Reader): Rusage {
  return r.sequence((s) => {
    const utime = readTimeval(s);
    const stime = readTimeval(s);
    const counters: Record<string, bigint> = {};
    for (const key of RUSAGE_COUNTERS) counters[key] = s.int64(key);
    return { utime, stime, ...counters } as unknown as Rusage;
  });
}

const encRusage = (u: Rusage): Der =>
  enc.sequence([
    encTimeval(u.utime),
    encTimeval(u.stime),
    ...RUSAGE_COUNTERS.map((key) => enc.int64(u[key])),
  ]);

/** The five 32-bit INTEGER fields of Ifdata after the name. */
const IF_INTS = ['flags', 'sendLength', 'maxSendLength', 'sendDrops', 'mtu'] as const;
/** The int64 counters of Ifdata, in wire order. */
const IF_COUNTERS = [
  'baudrate',
  'inputPackets',
  'inputErrors',
  'outputPackets',
  'outputErrors',
  'collisions',
  'inputBytes',
  'outputBytes',
  'inputMcast',
  'outputMcast',
  'inputDropped',
  'outputDropped',
] as const;

function readIfdata(r: Reader): Ifdata {
  return r.sequence((s) => {
    const value: Record<string, string | number | bigint> = { bridge: s.utf8('bridge') };
    for (const key of IF_INTS) value[key] = s.int(key);
    for (const key of IF_COUNTERS) value[key] = s.int64(key);
    return value as unknown as Ifdata;
  });
}

const encIfdata = (i: Ifdata): Der =>
  enc.sequence([
    enc.utf8(i.bridge),
    ...IF_INTS.map((key) => enc.integer(i[key])),
    ...IF_COUNTERS.map((key) => enc.int64(i[key])),
  ]);

const KINFO_COUNTERS = ['vsize', 'rss', 'tsize', 'dsize', 'ssize', 'runtime'] as const;

/** Reads the content of the IMPLICIT [1] KinfoMem (its SEQUENCE identifier replaced by a1). */
function readKinfoMemBody(s: Reader): KinfoMem {
  const counters: Record<string, bigint> = {};
  for (const key of KINFO_COUNTERS) counters[key] = s.int64(key);
  const cow = s.int('cow');
  const start = readTimeval(s);
  return { ...counters, cow, start } as unknown as KinfoMem;
}

const kinfoMemBody = (k: KinfoMem): Der[] => [
  ...KINFO_COUNTERS.map((key) => enc.int64(k[key])),
  enc.integer(k.cow),
  encTimeval(k.start),
];

export function readStatsData(r: Reader): StatsData {
  return r.sequence((s) => {
    const rusage = readRusage(s);
    const ifdata = s.listOf(readIfdata);
    const vmmStats = s.optionalExplicit(0, (x) =>
      x.listOf((e) => e.sequence((p) => ({ key: p.utf8('key'), value: p.int64('value') }))),
    );
    let kinfoMem: KinfoMem | null = null;
    if (s.peek() === ctx(1)) {
      const inner = s.enter(ctx(1), 'kinfo-mem');
      kinfoMem = readKinfoMemBody(inner);
      inner.done();
    }
    return { rusage, ifdata, vmmStats, kinfoMem };
  });
}

export function encStatsData(d: StatsData): Der {
  const fields = [encRusage(d.rusage), enc.sequence(d.ifdata.map(encIfdata))];
  if (d.vmmStats !== null) {
    const entries = d.vmmStats.map((e) => enc.sequence([enc.utf8(e.key), enc.int64(e.value)]));
    fields.push(enc.explicit(0, enc.sequence(entries)));
  }
  if (d.kinfoMem !== null) fields.push(enc.implicit(1, kinfoMemBody(d.kinfoMem)));
  return enc.sequence(fields);
}
