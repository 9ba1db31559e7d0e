// Benchmark: boot-to-exit wall time of the canary under petrel-hvt and under petrel-spt (median
// of 50 runs after warm-up, spawned directly, output discarded) and peak RSS (/usr/bin/time -v),
// beside /bin/true as the process-start floor. petrel-spt needs no KVM, so it is measured on every
// host. With SOLO5_HVT naming a real solo5-hvt, the same image runs under it
// in the same run and the ratio is printed. Targets: ratio ≤ 1.0; peak RSS ≤ 2 MiB plus the guest
// memory actually touched. Without a usable /dev/kvm only the floor, the tender's path up to
// /dev/kvm and its work against the fake /dev/kvm (native/tools/fake-kvm.c) can be measured.
// Run: npm run build:native && npm run bench -- boot

import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, openSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

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
}

function kvmUsable(): boolean {
  try {
    closeSync(openSync('/dev/kvm', 'r+'));
    return true;
  } catch {
    return false;
  }
}

function once(c: Case): { ms: number; status: number | null } {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(c.cmd, c.args, { stdio: 'ignore', env: c.env ?? process.env });
  return { ms: Number(process.hrtime.bigint() - t0) / 1e6, status: r.status };
}

function timing(c: Case): { median: number; mean: number; min: number; max: number } | string {
  for (let i = 0; i < WARMUP; i++) {
    const r = once(c);
    if (r.status !== c.status) return `exit status ${r.status}, expected ${c.status}`;
  }
  const ms: number[] = [];
  for (let i = 0; i < RUNS; i++) ms.push(once(c).ms);
  ms.sort((a, b) => a - b);
  const mid = ms.length / 2;
  const median = ms.length % 2 ? (ms[Math.floor(mid)] ?? 0) : ((ms[mid - 1] ?? 0) + (ms[mid] ?? 0)) / 2;
  return { median, mean: ms.reduce((a, b) => a + b, 0) / ms.length, min: ms[0] ?? 0, max: ms.at(-1) ?? 0 };
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

const cases: Case[] = [{ name: '/bin/true (process-start floor)', cmd: '/bin/true', args: [], status: 0 }];
const kvm = kvmUsable();
if (kvm) {
  cases.push({
    name: 'petrel-hvt --mem=2 canary.hvt exit 0',
    cmd: tender,
    args: ['--mem=2', image, 'exit', '0'],
    status: 0,
  });
  cases.push({
    name: 'petrel-hvt --mem=2 canary.hvt hello',
    cmd: tender,
    args: ['--mem=2', image, 'hello'],
    status: 0,
  });
} else {
  cases.push({
    name: 'petrel-hvt up to /dev/kvm (no KVM here)',
    cmd: tender,
    args: ['--mem=2', image, 'exit', '0'],
    status: 1,
  });
  cases.push({
    name: 'petrel-hvt, fake /dev/kvm, halt at once',
    cmd: tender,
    args: ['--mem=2', image, 'exit', '0'],
    env: { ...process.env, LD_PRELOAD: `${build}fake-kvm.so`, FAKEKVM_SCRIPT: 'halt,0' },
    status: 0,
  });
}
cases.push(
  {
    name: 'petrel-spt --mem=2 canary.spt exit 0',
    cmd: sptTender,
    args: ['--mem=2', sptImage, 'exit', '0'],
    status: 0,
  },
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
);
const solo5 = process.env.SOLO5_HVT;
if (solo5) {
  cases.push({
    name: `${solo5} --mem=2 canary.hvt exit 0`,
    cmd: solo5,
    args: ['--mem=2', image, 'exit', '0'],
    status: kvm ? 0 : 1,
  });
}

console.log(`boot to exit, ${RUNS} runs after ${WARMUP} warm-up runs; ms; peak RSS over ${RSS_RUNS} runs`);
console.log(`/dev/kvm usable: ${kvm}`);
const medians = new Map<string, number>();
for (const c of cases) {
  const t = timing(c);
  if (typeof t === 'string') {
    console.log(`${c.name}: BROKEN (${t})`);
    continue;
  }
  medians.set(c.name, t.median);
  const rss = peakRss(c);
  console.log(
    `${c.name}: median ${t.median.toFixed(2)} mean ${t.mean.toFixed(2)} min ${t.min.toFixed(2)} max ${t.max.toFixed(2)}` +
      `; peak RSS ${rss === undefined ? 'n/a (no /usr/bin/time)' : `${(rss / 1024).toFixed(2)} MiB`}`,
  );
  if ((c.cmd === tender || c.cmd === sptTender) && rss !== undefined) {
    // The canary touches well under 1 MiB of guest memory (its image, stack and buffers).
    console.log(
      `  target peak RSS <= 2 MiB + guest memory touched (< 1 MiB): ${rss <= 3 * 1024 ? 'met' : 'MISSED'}`,
    );
  }
}
const floor = medians.get('/bin/true (process-start floor)');
const spt = medians.get('petrel-spt --mem=2 canary.spt exit 0');
if (floor !== undefined && spt !== undefined) {
  // solo5.md §5.2: solo5-spt boots hello in 0.84 ms where /bin/true takes 0.55 ms (ratio ~1.5).
  console.log(`petrel-spt boot->exit / /bin/true: ${(spt / floor).toFixed(3)} (solo5-spt on CI: ~1.5)`);
}
const ours = medians.get('petrel-hvt --mem=2 canary.hvt exit 0');
const theirs = solo5 ? medians.get(`${solo5} --mem=2 canary.hvt exit 0`) : undefined;
if (ours !== undefined && theirs !== undefined) {
  const ratio = ours / theirs;
  console.log(
    `ratio petrel-hvt / solo5-hvt: ${ratio.toFixed(3)} (target <= 1.0: ${ratio <= 1 ? 'met' : 'MISSED'})`,
  );
} else if (!solo5) {
  console.log('SOLO5_HVT not set: no solo5-hvt comparison');
}
