// Benchmark: boot-to-exit wall time of the canary under petrel-hvt and under petrel-spt, and
// peak RSS (/usr/bin/time -v), beside /bin/true as the process-start floor. Each group of cases
// is measured in alternating rounds (every case once per round, the order rotated each round) so
// a change in machine load hits all of them alike; medians of 50 rounds after warm-up, spawned
// directly, output discarded. petrel-spt needs no KVM, so it is measured on every host; with
// SOLO5_SPT naming a real solo5-spt the same canary.spt runs under it in the same rounds, and with
// SOLO5_HVT a real solo5-hvt runs canary.hvt. Targets: petrel-spt / /bin/true ≤ 1.5 (solo5-spt
// itself measures about 1.1-1.5 here), petrel-spt / solo5-spt ≤ 1.0, petrel-hvt / solo5-hvt
// ≤ 1.0; peak RSS ≤ 2 MiB plus the guest memory actually touched. Without a usable /dev/kvm the
// hvt group measures the tender's path up to /dev/kvm and its work against the fake /dev/kvm
// (native/tools/fake-kvm.c).
// Run: npm run build:native && npm run bench -- boot

import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { kvmUsable } from '../test/native/kvm.js';
// The tests' gate: kvm-probe, and PETREL_TEST_NO_KVM=1 to measure as on a host without KVM.
import { loadAverage } from './support/load.js';

const RUNS = 50;
const WARMUP = 5;
const RSS_RUNS = 5;

// Compiled to dist/bench/boot.js by scripts/bench.mjs; the repository root is two levels up.
const root = fileURLToPath(new URL(import.meta.url.includes('/dist/') ? '../../' : '../', import.meta.url));
const build = `${root}native/build/`;
const tender = `${build}petrel-hvt`;
const image = `${build}canary.hvt`;
const sptTender = `${build}petrel-spt`;
const sptImage = `${build}canary.spt`;

interface Case {
  name: string;
  cmd: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  /** The exit status a run must end with, or the case is reported as broken. */
  status: number;
  /** Whether a peak RSS target applies (a tender running the canary). */
  rssTarget?: boolean;
}

interface Timing {
  median: number;
  mean: number;
  min: number;
  max: number;
}

function once(c: Case): { ms: number; status: number | null } {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(c.cmd, c.args, { stdio: 'ignore', env: c.env ?? process.env });
  return { ms: Number(process.hrtime.bigint() - t0) / 1e6, status: r.status };
}

function stats(ms: number[]): Timing {
  const sorted = [...ms].sort((a, b) => a - b);
  const mid = sorted.length / 2;
  const median =
    sorted.length % 2 ? (sorted[Math.floor(mid)] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
  return {
    median,
    mean: sorted.reduce((a, b) => a + b, 0) / sorted.length,
    min: sorted[0] ?? 0,
    max: sorted.at(-1) ?? 0,
  };
}

/** Alternating rounds over the group; a case whose warm-up ends with the wrong status is broken. */
function alternate(group: Case[]): Map<Case, Timing | string> {
  const result = new Map<Case, Timing | string>();
  const live: Case[] = [];
  for (const c of group) {
    let broken: string | null = null;
    for (let i = 0; i < WARMUP && broken === null; i++) {
      const r = once(c);
      if (r.status !== c.status) broken = `exit status ${r.status}, expected ${c.status}`;
    }
    if (broken === null) live.push(c);
    else result.set(c, broken);
  }
  const samples = new Map<Case, number[]>(live.map((c) => [c, []]));
  for (let round = 0; round < RUNS; round++) {
    for (let k = 0; k < live.length; k++) {
      const c = live[(round + k) % live.length] as Case;
      samples.get(c)?.push(once(c).ms);
    }
  }
  for (const c of live) result.set(c, stats(samples.get(c) ?? []));
  return result;
}

/** Peak RSS in KiB over a few runs, from GNU time's "Maximum resident set size". */
function peakRss(c: Case): number | undefined {
  if (!existsSync('/usr/bin/time')) return undefined;
  let peak = 0;
  for (let i = 0; i < RSS_RUNS; i++) {
    const r = spawnSync('/usr/bin/time', ['-v', c.cmd, ...c.args], {
      encoding: 'utf8',
      stdio: ['ignore', 'ignore', 'pipe'],
      env: c.env ?? process.env,
    });
    const m = /Maximum resident set size \(kbytes\): (\d+)/.exec(r.stderr);
    if (m) peak = Math.max(peak, Number(m[1]));
  }
  return peak || undefined;
}

function report(group: Case[]): Map<string, number> {
  const medians = new Map<string, number>();
  for (const [c, t] of alternate(group)) {
    if (typeof t === 'string') {
      console.log(`${c.name}: BROKEN (${t})`);
      continue;
    }
    medians.set(c.name, t.median);
    const rss = peakRss(c);
    console.log(
      `${c.name}: median ${t.median.toFixed(3)} mean ${t.mean.toFixed(3)} min ${t.min.toFixed(3)} max ${t.max.toFixed(3)}` +
        `; peak RSS ${rss === undefined ? 'n/a (no /usr/bin/time)' : `${(rss / 1024).toFixed(2)} MiB`}`,
    );
    if (c.rssTarget && rss !== undefined) {
      // The canary touches well under 1 MiB of guest memory (its image, stack and buffers).
      console.log(
        `  target peak RSS <= 2 MiB + guest memory touched (< 1 MiB): ${rss <= 3 * 1024 ? 'met' : 'MISSED'}`,
      );
    }
  }
  return medians;
}

function ratio(label: string, ours: number | undefined, theirs: number | undefined, goal: number): void {
  if (ours === undefined || theirs === undefined) return;
  const r = ours / theirs;
  console.log(`${label}: ${r.toFixed(3)} (goal <= ${goal}: ${r <= goal ? 'met' : 'MISSED'})`);
}

const floor: Case = { name: '/bin/true (process-start floor)', cmd: '/bin/true', args: [], status: 0 };
const kvm = kvmUsable;
console.log(
  `boot to exit, ${RUNS} alternating rounds after ${WARMUP} warm-up runs each; ms; peak RSS over ${RSS_RUNS} runs`,
);
console.log(`/dev/kvm usable: ${kvm}; load average before: ${loadAverage()}`);

// spt: the tender, the floor and solo5-spt on the same image, in the same rounds.
const sptExit: Case = {
  name: 'petrel-spt --mem=2 canary.spt exit 0',
  cmd: sptTender,
  args: ['--mem=2', sptImage, 'exit', '0'],
  status: 0,
  rssTarget: true,
};
const solo5Spt = process.env.SOLO5_SPT;
const solo5SptExit: Case | undefined = solo5Spt
  ? { name: `${solo5Spt} --mem=2 canary.spt exit 0`, cmd: solo5Spt, args: sptExit.args, status: 0 }
  : undefined;
console.log('\n-- spt');
const spt = report([
  floor,
  sptExit,
  ...(solo5SptExit ? [solo5SptExit] : []),
  {
    name: 'petrel-spt --mem=2 canary.spt hello',
    cmd: sptTender,
    args: ['--mem=2', sptImage, 'hello'],
    status: 0,
  },
  {
    name: 'petrel-spt canary.spt exit 0 (default 512 MiB)',
    cmd: sptTender,
    args: [sptImage, 'exit', '0'],
    status: 0,
  },
]);
ratio('petrel-spt boot->exit / /bin/true', spt.get(sptExit.name), spt.get(floor.name), 1.5);
if (solo5SptExit) {
  ratio(
    'solo5-spt boot->exit / /bin/true (for reference)',
    spt.get(solo5SptExit.name),
    spt.get(floor.name),
    1.5,
  );
  ratio('petrel-spt / solo5-spt, same image', spt.get(sptExit.name), spt.get(solo5SptExit.name), 1.0);
} else {
  console.log('SOLO5_SPT not set: no solo5-spt comparison');
}

// hvt: real KVM where it works, else the path up to /dev/kvm and the fake /dev/kvm.
const hvtExit: Case = {
  name: 'petrel-hvt --mem=2 canary.hvt exit 0',
  cmd: tender,
  args: ['--mem=2', image, 'exit', '0'],
  status: kvm ? 0 : 1,
  rssTarget: kvm,
};
const hvt: Case[] = [floor, hvtExit];
if (kvm) {
  hvt.push({
    name: 'petrel-hvt --mem=2 canary.hvt hello',
    cmd: tender,
    args: ['--mem=2', image, 'hello'],
    status: 0,
  });
} else {
  hvtExit.name = 'petrel-hvt up to /dev/kvm (no KVM here)';
  hvt.push({
    name: 'petrel-hvt, fake /dev/kvm, halt at once',
    cmd: tender,
    args: ['--mem=2', image, 'exit', '0'],
    env: { ...process.env, LD_PRELOAD: `${build}fake-kvm.so`, FAKEKVM_SCRIPT: 'halt,0' },
    status: 0,
  });
}
const solo5Hvt = process.env.SOLO5_HVT;
const solo5HvtExit: Case | undefined = solo5Hvt
  ? { name: `${solo5Hvt} --mem=2 canary.hvt exit 0`, cmd: solo5Hvt, args: hvtExit.args, status: kvm ? 0 : 1 }
  : undefined;
if (solo5HvtExit) hvt.push(solo5HvtExit);
console.log('\n-- hvt');
const hvtMedians = report(hvt);
if (solo5HvtExit)
  ratio('petrel-hvt / solo5-hvt', hvtMedians.get(hvtExit.name), hvtMedians.get(solo5HvtExit.name), 1.0);
else console.log('SOLO5_HVT not set: no solo5-hvt comparison');
console.log(`\nload average after: ${loadAverage()}`);
