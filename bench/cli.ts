// Benchmark: the start-up of the `petrel` executable as a person runs it, the whole process from
// exec to exit: `petrel info` against a REAL petreld on its local socket, and `petrel --help`
// (the dispatcher alone), each beside `node -e 0`, the floor of any Node program on this machine.
// `petrel` is package.json's bin (the CommonJS bundle); `node dist/src/cli/petrel.js`, the way
// the README used to run it, goes through a shim that starts the ES module loader first.
// Runs alternate (petrel, node, petrel, node, …) so a drift in the machine's speed hits both;
// figures are medians of wall time, and each ratio is the median of the pairs' ratios.
// Target (issue 15): `petrel info` ≤ 1.3 × `node -e 0`.
//
// petreld runs as its own process with no runtime (nothing to boot: info lists no unikernel),
// in a network namespace of its own. Run: npm run bench -- cli (BENCH_CLI_RUNS, default 40;
// BENCH_CLI_PETREL=/usr/bin/petrel measures the installed package's client, issue 25).

import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { launchDaemon } from '../test/daemon/process.js';
import { repo } from '../test/engine/guest.js';
import { makeNetns } from '../test/engine/harness.js';
import { loadAverage } from './support/load.js';

const RUNS = Number(process.env.BENCH_CLI_RUNS ?? 40);
const WARM_UP = 3;
const bin = JSON.parse(readFileSync(path.join(repo, 'package.json'), 'utf8')).bin.petrel as string;
/** BENCH_CLI_PETREL: another `petrel`, e.g. /usr/bin/petrel of the installed Debian package. */
const petrel = process.env.BENCH_CLI_PETREL ?? path.join(repo, bin);
const shim = path.join(repo, 'dist', 'src', 'cli', 'petrel.js');
/** Clock ticks per second of /proc's CPU times (USER_HZ, 100 on Linux). */
const TICKS = 100;

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
};

/** CPU seconds of the children this process has waited for (utime + stime). */
function childrenCpu(): number {
  // Fields after the command name in parentheses; cutime and cstime are the 16th and 17th.
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) / TICKS;
}

interface Timing {
  readonly wallMs: number;
  readonly cpuMs: number;
}

/** One run of `argv`, which must exit 0 (its output is read and dropped). */
function time(argv: readonly string[], env: NodeJS.ProcessEnv): Timing {
  const cpu = childrenCpu();
  const started = performance.now();
  const run = spawnSync(argv[0] as string, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], env });
  const wallMs = performance.now() - started;
  if (run.status !== 0) throw new Error(`${argv.join(' ')} exited ${run.status}: ${run.stderr}`);
  return { wallMs, cpuMs: (childrenCpu() - cpu) * 1000 };
}

interface Pairing {
  readonly a: Timing[];
  readonly b: Timing[];
}

function alternate(a: readonly string[], b: readonly string[], env = process.env): Pairing {
  for (let i = 0; i < WARM_UP; i++) {
    time(a, env);
    time(b, env);
  }
  const pairs: Pairing = { a: [], b: [] };
  for (let i = 0; i < RUNS; i++) {
    pairs.a.push(time(a, env));
    pairs.b.push(time(b, env));
  }
  return pairs;
}

function report(label: string, { a, b }: Pairing, target: string): void {
  const ms = (values: readonly number[]) => `${median(values).toFixed(1)} ms`;
  const ratios = a.map((run, i) => run.wallMs / (b[i] as Timing).wallMs);
  // CPU times come in whole ticks (10 ms): only their sum over all runs means anything.
  const sum = (timings: readonly Timing[]) => timings.reduce((total, t) => total + t.cpuMs, 0);
  console.log(
    `  ${label.padEnd(14)} wall median ${ms(a.map((t) => t.wallMs))} vs node -e 0 ${ms(b.map((t) => t.wallMs))}` +
      `  ratio ${median(ratios).toFixed(2)}  (CPU ratio over all runs ${(sum(a) / sum(b)).toFixed(2)})  [${target}]`,
  );
}

const dir = await mkdtemp(path.join(tmpdir(), 'petrel-bench-cli-'));
const netns = makeNetns();
const runDir = path.join(dir, 'run');
const daemon = await launchDaemon(
  ['--state-dir', path.join(dir, 'state'), '--run-dir', runDir, '--runtimes', 'none', '--log-level', 'warn'],
  { PETREL_TEST_NETNS: netns.name },
);
try {
  const node = [process.execPath, '-e', '0'];
  console.log(
    `petrel (${path.relative(repo, petrel)}) vs node -e 0: ${RUNS} alternating pairs after ${WARM_UP}`,
  );
  report(
    'petrel info',
    alternate([process.execPath, petrel, 'info', '--run-dir', runDir], node),
    'target ≤ 1.3',
  );
  report('petrel --help', alternate([process.execPath, petrel, '--help'], node), 'the dispatcher alone');
  report(
    'petrel.js info',
    alternate([process.execPath, shim, 'info', '--run-dir', runDir], node),
    'through the ESM shim',
  );
  // Every Node process reads NODE_EXTRA_CA_CERTS at start, before any code of its own: where it
  // is set, it is most of `node -e 0`, so the same figures follow without it.
  const { NODE_EXTRA_CA_CERTS: extra, ...without } = process.env;
  if (extra !== undefined) {
    console.log(`  NODE_EXTRA_CA_CERTS is set (${extra}): every process above read it first; without it:`);
    report(
      'petrel info',
      alternate([process.execPath, petrel, 'info', '--run-dir', runDir], node, without),
      'same petreld, NODE_EXTRA_CA_CERTS unset',
    );
  }
  console.log(`  load average: ${loadAverage()}`);
} finally {
  await daemon.stop();
  netns.destroy();
  await rm(dir, { recursive: true, force: true });
}
