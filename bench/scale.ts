// Benchmark: petreld with 1,000 running unikernels (issue 13, item 6). Two real petreld
// processes side by side, each in a network namespace of its own, spt runtime (real guests:
// the spt canary in `wait` mode under the bundled petrel-spt, no KVM needed):
//   idle   keeps no unikernel (the control);
//   busy   is filled to BENCH_SCALE_VMS (1,000) running canaries,
// each with a network interface on one of two bridges, so a tap each (BENCH_SCALE_NET=0:
// none). A Linux bridge takes at most 1,023 ports: one bridge cannot hold 1,000 and a batch.
// Figures: busy's RSS (/proc/<pid>/smaps_rollup) with none running and with all running, each
// read after the same quiet period, BENCH_SCALE_SETTLE_MS (60 s: petreld collects once when
// quiet, src/host/garbage.ts), and right after the work too (target: growth ≤ 20 MiB); the
// create rate on idle (none running) and on busy (all running), in alternating batches of
// BENCH_SCALE_BATCH sequential creates over the local socket, each batch destroyed again after
// it is timed, so that both daemons see the same load (target: busy ≥ 0.9 × idle, medians),
// with petreld's CPU time per create beside it (the machine's load disturbs wall time far
// more); `info` of all on busy, from connect to the last byte (target ≤ 50 ms, median). The
// fill prints its rate per tenth; the control's RSS before and after the same batches is what
// the creates cost a daemon whatever runs.
// Tenders run jailed (issue 22), as by default, and a third daemon, plain, runs --no-jail beside
// busy: filled alongside it (tenths in turn), its batches in the same rounds, its RSS read at the
// same moments, so the jail's cost in RSS growth, create rate and CPU per create is printed side
// by side (target: within 10 %). BENCH_SCALE_JAIL=0 runs idle and busy with --no-jail and no plain.
// A unikernel that exits by itself fails the run, with petreld's log lines about it.
// Open files: petreld's holder keeps each tender's console FIFO open; the bench raises its own
// limit (inherited by the daemons and their holders) with prlimit(1) as far as it may, and says so.
// BENCH_SCALE_HEAPSNAPSHOTS=DIR: each daemon writes a V8 heap snapshot into DIR on SIGUSR1
// (node --heapsnapshot-signal), taken on busy when idle and with all running, for analysis
// only: writing a snapshot raises the RSS, so such a run's RSS figures are not the benchmark's.
// Run: npm run build && npm run bench -- scale

import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { request, said } from '../test/daemon/client.js';
import { type DaemonProcess, launchDaemon } from '../test/daemon/process.js';
import { repo, sptCanary, sptCanaryNet } from '../test/engine/guest.js';
import { canaryConfig, createCommand, makeNetns } from '../test/engine/harness.js';
import { loadAverage } from './support/load.js';

const VMS = Number(process.env.BENCH_SCALE_VMS ?? 1000);
const BATCH = Number(process.env.BENCH_SCALE_BATCH ?? 30);
const ROUNDS = Number(process.env.BENCH_SCALE_ROUNDS ?? 7);
const INFOS = 15;
/** Quiet time before each RSS reading: V8's memory reducer gives back what a burst grew. */
const SETTLE_MS = Number(process.env.BENCH_SCALE_SETTLE_MS ?? 60_000);
const WANTED_FILES = 65_536;
const SNAPSHOTS = process.env.BENCH_SCALE_HEAPSNAPSHOTS;
const PETRELD = path.join(repo, 'dist', 'src', 'cli', 'petreld.js');
const CLOCK_TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim() || 100);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
};

/**
 * The open-files limit of this process and its children, raised to WANTED_FILES where allowed,
 * else the soft limit to the hard one (raising a hard limit needs CAP_SYS_RESOURCE).
 */
function raiseOpenFiles(): string {
  const limit = () => /Max open files\s+(\d+)\s+(\d+)/.exec(readFileSync('/proc/self/limits', 'utf8'));
  const before = limit();
  const prlimit = (value: string) =>
    spawnSync('prlimit', ['--pid', String(process.pid), `--nofile=${value}`], { encoding: 'utf8' });
  const wanted = prlimit(String(WANTED_FILES));
  const fallback = wanted.status === 0 ? null : prlimit(`${before?.[2]}:${before?.[2]}`);
  const after = limit();
  const now = `open files: soft ${after?.[1]}, hard ${after?.[2]}, was ${before?.[1]}/${before?.[2]}`;
  if (fallback === null) return `${now} (raised with prlimit)`;
  return `${now} (prlimit may not raise the hard limit to ${WANTED_FILES} here: ${wanted.stderr.trim()}; soft limit ${fallback.status === 0 ? 'set to the hard one' : 'unchanged'})`;
}

function resident(pid: number): { rss: number; anon: number } {
  const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kib = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? Number.NaN);
  return { rss: kib('Rss') / 1024, anon: kib('Anonymous') / 1024 };
}

const openFiles = (pid: number) => readdirSync(`/proc/${pid}/fd`).length;

/** The holder under `runDir` (its pid file), for its open files. */
function holderPid(runDir: string): number | null {
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    const argv = (() => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      } catch {
        return [];
      }
    })();
    if (argv[0]?.endsWith('petrel-holder') && argv.includes(path.join(runDir, 'holder'))) return Number(pid);
  }
  return null;
}

interface Node {
  readonly label: string;
  readonly daemon: DaemonProcess;
  readonly runDir: string;
  readonly socket: string;
  readonly destroyNetns: () => void;
  /** petreld's log lines about unikernels that exited. */
  readonly exits: readonly string[];
}

const JAILED = process.env.BENCH_SCALE_JAIL !== '0';

async function startNode(dir: string, label: string, jail = JAILED): Promise<Node> {
  const netns = makeNetns();
  // No IPv6 on the bridge and taps: each new tap's link-local announcements would otherwise
  // reach every other tap, and a `wait` canary with a packet pending spins instead of sleeping.
  spawnSync('ip', [
    'netns',
    'exec',
    netns.name,
    'sysctl',
    '-q',
    '-w',
    'net.ipv6.conf.all.disable_ipv6=1',
    'net.ipv6.conf.default.disable_ipv6=1',
  ]);
  const runDir = path.join(dir, label, 'run');
  const flags = ['--state-dir', path.join(dir, label, 'state'), '--run-dir', runDir];
  flags.push('--runtimes', 'spt', '--log-level', 'info', '--stop-timeout', '5s');
  if (!jail) flags.push('--no-jail');
  const env =
    SNAPSHOTS === undefined
      ? {}
      : {
          NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --heapsnapshot-signal=SIGUSR1 --diagnostic-dir=${SNAPSHOTS}`,
        };
  try {
    const daemon = await launchDaemon(flags, env, PETRELD, 60_000, netns.name);
    // Its log is read only until ready; afterwards it is drained so the pipe never fills,
    // keeping the lines about unikernels that exited (a run fails with them).
    const exits: string[] = [];
    let partial = '';
    daemon.child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) if (line.includes('exited')) exits.push(line);
    });
    return {
      label,
      exits,
      daemon,
      runDir,
      socket: path.join(runDir, 'util', 'vmmd.sock'),
      destroyNetns: netns.destroy,
    };
  } catch (error) {
    netns.destroy();
    throw error;
  }
}

/**
 * Each canary with a network interface on a bridge (a tap each, as real unikernels have),
 * alternately on two bridges: a Linux bridge takes at most 1,023 ports.
 */
const NET = process.env.BENCH_SCALE_NET !== '0';
const configs = NET
  ? await Promise.all(
      ['br0', 'service'].map((bridge) =>
        canaryConfig(sptCanaryNet, ['wait', 'scale'], { bridges: [{ netif: 'service', bridge, mac: null }] }),
      ),
    )
  : [await canaryConfig(sptCanary, ['wait', 'scale'])];
let created = 0;

async function create(node: Node, vm: string): Promise<void> {
  const config = configs[created++ % configs.length] as (typeof configs)[number];
  const replies = await request(node.socket, vm, createCommand(config));
  if (said(replies[0]) !== 'created unikernel')
    throw new Error(`${node.label}: create ${vm}: ${said(replies[0])}`);
}

async function destroy(node: Node, vm: string): Promise<void> {
  const replies = await request(node.socket, vm, { type: 'unikernel-destroy' });
  if (said(replies[0]) !== 'destroyed unikernel')
    throw new Error(
      `${node.label}: destroy ${vm}: ${said(replies[0])}; petreld logged: ${node.exits.slice(-5).join(' | ') || 'no exit'}`,
    );
}

/** CPU time petreld has used (user and system), ms: less disturbed by the load than wall time. */
function cpuMs(pid: number): number {
  const fields = (readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1] ?? '').split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
}

interface Batch {
  readonly rate: number;
  /** CPU ms per create of petreld, and of its holder (the tenders' parent). */
  readonly cpu: number;
  readonly holderCpu: number;
}

/** Creates `names` one after another: creates per second, and CPU ms per create. */
async function createRate(node: Node, names: readonly string[]): Promise<Batch> {
  const holder = holderPid(node.runDir);
  const holderCpu = () => (holder === null ? 0 : cpuMs(holder));
  const cpu = cpuMs(node.daemon.pid);
  const held = holderCpu();
  const started = performance.now();
  for (const vm of names) await create(node, vm);
  return {
    rate: names.length / ((performance.now() - started) / 1000),
    cpu: (cpuMs(node.daemon.pid) - cpu) / names.length,
    holderCpu: (holderCpu() - held) / names.length,
  };
}

async function infoMs(node: Node): Promise<{ ms: number; entries: number }> {
  const started = performance.now();
  const replies = await request(node.socket, ':', { type: 'unikernel-info', release: '2.7' });
  const ms = performance.now() - started;
  const payload = replies[0]?.payload;
  const entries =
    payload?.kind === 'reply' && payload.reply.type === 'unikernel-info' ? payload.reply.entries.length : -1;
  return { ms, entries };
}

async function snapshot(node: Node, what: string): Promise<void> {
  if (SNAPSHOTS === undefined) return;
  const before = new Set(readdirSync(SNAPSHOTS));
  node.daemon.child.kill('SIGUSR1');
  for (;;) {
    await sleep(500);
    const fresh = readdirSync(SNAPSHOTS).filter((f) => !before.has(f) && f.endsWith('.heapsnapshot'));
    if (fresh.length > 0) {
      // Written in one go by the main thread, which answers nothing meanwhile.
      await infoMs(node);
      console.log(`  heap snapshot ${what}: ${path.join(SNAPSHOTS, fresh[0] as string)}`);
      return;
    }
  }
}

const range = (prefix: string, from: number, to: number) =>
  Array.from({ length: to - from }, (_, i) => `:${prefix}${from + i}`);

const limits = raiseOpenFiles();
const dir = await mkdtemp(path.join(tmpdir(), 'petrel-bench-scale-'));
const nodes: Node[] = [];
try {
  const idle = await startNode(dir, 'idle');
  nodes.push(idle);
  const busy = await startNode(dir, 'busy');
  nodes.push(busy);
  const plain = JAILED ? await startNode(dir, 'plain', false) : null;
  if (plain !== null) nodes.push(plain);
  const full = plain === null ? [busy] : [busy, plain];
  console.log(
    `petreld ×${nodes.length} (${PETRELD}), runtimes spt, guests real (petrel-spt, canary wait${NET ? ', a tap each, on two bridges' : ''}); ${JAILED ? 'idle and busy jailed, plain unjailed' : 'unjailed'}; ${limits}`,
  );

  const rss = (label: string, node: Node) => {
    const { rss: total, anon } = resident(node.daemon.pid);
    console.log(
      `${node.label}, ${label}: RSS ${total.toFixed(1)} MiB (anonymous ${anon.toFixed(1)})  [load average ${loadAverage()}]`,
    );
    return total;
  };
  await sleep(SETTLE_MS);
  const idleBusy = rss('none running', busy);
  const idlePlain = plain === null ? 0 : rss('none running', plain);
  const idleIdle = rss('none running', idle);

  await snapshot(busy, 'idle');

  const tenth = Math.max(1, Math.round(VMS / 10));
  for (const node of full) {
    const fill: string[] = [];
    for (let from = 0; from < VMS; from += tenth) {
      const to = Math.min(VMS, from + tenth);
      fill.push(`${to}: ${(await createRate(node, range('vm', from, to))).rate.toFixed(1)}/s`);
    }
    console.log(
      `${node.label}: fill to ${VMS}, creates per second by tenth: ${fill.join(', ')}  [load average ${loadAverage()}]`,
    );
  }

  const batches = { idle: [] as Batch[], busy: [] as Batch[], plain: [] as Batch[] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const node of [idle, ...full]) {
      const names = range(`r${round}-`, 0, BATCH);
      batches[node.label as keyof typeof batches].push(await createRate(node, names));
      for (const vm of names) await destroy(node, vm);
    }
  }
  type Which = keyof typeof batches;
  const rate = (which: Which) => median(batches[which].map((b) => b.rate));
  const cpu = (which: Which) => median(batches[which].map((b) => b.cpu));
  const holderCpu = (which: Which) => median(batches[which].map((b) => b.holderCpu));
  const each = (which: Which) => batches[which].map((b) => b.rate.toFixed(0)).join(' ');
  console.log(
    `create rate, ${ROUNDS} alternating batches of ${BATCH} (medians): none running ${rate('idle').toFixed(1)}/s (${each('idle')}), ${VMS} running ${rate('busy').toFixed(1)}/s (${each('busy')}): ratio ${(rate('busy') / rate('idle')).toFixed(2)} (target ≥ 0.9)  [load average ${loadAverage()}]`,
  );
  console.log(
    `CPU per create (medians): petreld none running ${cpu('idle').toFixed(2)} ms, ${VMS} running ${cpu('busy').toFixed(2)} ms (ratio ${(cpu('busy') / cpu('idle')).toFixed(2)}); its holder ${holderCpu('idle').toFixed(2)} ms, ${holderCpu('busy').toFixed(2)} ms`,
  );
  if (plain !== null)
    console.log(
      `jailed beside unjailed, ${VMS} running each, same rounds (medians): create rate ${rate('busy').toFixed(1)}/s vs ${rate('plain').toFixed(1)}/s (${each('plain')}), ratio ${(rate('busy') / rate('plain')).toFixed(2)} (target ≥ 0.9); petreld CPU per create ${cpu('busy').toFixed(2)} vs ${cpu('plain').toFixed(2)} ms, ratio ${(cpu('busy') / cpu('plain')).toFixed(2)} (ticks of 10 ms over ${BATCH} creates)`,
    );

  const infos: number[] = [];
  for (let i = 0; i < INFOS; i++) {
    const { ms, entries } = await infoMs(busy);
    if (entries !== VMS) throw new Error(`info listed ${entries} of ${VMS}`);
    infos.push(ms);
  }
  console.log(
    `info of all ${VMS}: median ${median(infos).toFixed(1)} ms, max ${Math.max(...infos).toFixed(1)} ms (target ≤ 50)  [load average ${loadAverage()}]`,
  );

  rss(`${VMS} running, at once`, busy);
  await sleep(SETTLE_MS);
  const fullBusy = rss(`${VMS} running`, busy);
  const fullPlain = plain === null ? 0 : rss(`${VMS} running`, plain);
  const endIdle = rss('none running, after the same batches (control)', idle);
  const growth = fullBusy - idleBusy;
  console.log(
    `busy, none → ${VMS} running: RSS growth ${growth.toFixed(1)} MiB, ${((growth * 1024) / VMS).toFixed(1)} KiB per unikernel (target ≤ 20 MiB); the control grew ${(endIdle - idleIdle).toFixed(1)} MiB meanwhile`,
  );
  if (plain !== null) {
    const plainGrowth = fullPlain - idlePlain;
    console.log(
      `RSS growth to ${VMS} running, jailed beside unjailed: ${growth.toFixed(1)} vs ${plainGrowth.toFixed(1)} MiB (difference ${(growth - plainGrowth).toFixed(1)} MiB, ${(((growth - plainGrowth) * 1024) / VMS).toFixed(1)} KiB per unikernel; target: within 10 %)`,
    );
  }
  const holder = holderPid(busy.runDir);
  console.log(
    `open files with ${VMS} running: petreld ${openFiles(busy.daemon.pid)}, its holder ${holder === null ? '?' : openFiles(holder)}`,
  );
  await snapshot(busy, `${VMS} running`);
} finally {
  // SIGUSR2: every guest is stopped with its daemon.
  for (const node of nodes.reverse()) {
    await node.daemon.stop('SIGUSR2').catch(() => undefined);
    node.destroyNetns();
  }
  await rm(dir, { recursive: true, force: true });
}
