// petreld's resident memory when idle, as `ps` shows it (RSS, split into anonymous memory and
// pages of the node binary and libraries), each process in a network namespace of its own:
//   floor        a bare `node` that does nothing, and a bare node:tls server (the endpoint's TLS
//                options) after the same sessions: what Node itself costs on this machine;
//   petreld      without TLS, and with the TLS endpoint: once ready, then after sessions of the
//                petrel client, read 5 s after and again when idle: 60 s after, once the file
//                thread has ended (30 s without a state write) and V8's memory reducer has
//                given back the young generation the sessions grew (it acts after ~45 s idle);
//                the TLS daemon also under `node --max-semi-space-size=1` (young generation
//                kept at 1 MiB semi-spaces), the V8 flag considered for petreld: measured (load
//                average 8-10) 76.6 against 91.1 MiB right after 1000 sessions, but 72.2 against
//                65.8 MiB once idle (more is promoted and stays in the old generation), so
//                petreld sets no V8 flag. It can take effect only from node's command line: set
//                at run time (v8.setFlagsFromString), the equivalent flag is undone whenever
//                node starts a worker thread, as petreld's file thread.
//   web          petreld with TLS and the web API (webListen): its HTTPS listener and the root
//                statistics subscription the dashboard's plots are sampled by (issue 24), after
//                the same TLS sessions; no unikernel runs, so what it adds is the code loaded and
//                the sampling timer.
// Target (issue 15): ≤ 48 MiB with TLS; Albatross's four daemons together: 41.7 MiB.
// Guests are real: petreld runs the spt canary (native/build/petrel-spt).
// Run: npm run bench -- idle   (BENCH_IDLE_SESSIONS sets the sessions, default 1000)

import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { FILE_THREAD_IDLE_MS } from '../src/host/file-thread.js';
import { launchDaemon } from '../test/daemon/process.js';
import { loadAverage } from './support/load.js';
import { loopbackNetns, PETRELD, petreldFlags, pki, runWorkers, startFloorProcess } from './tls.js';

const SESSIONS = Number(process.env.BENCH_IDLE_SESSIONS ?? 1000);
const SETTLE_MS = 5_000;
/** How long after its last session a daemon counts as idle (see the header). */
const IDLE_MS = Math.max(60_000, FILE_THREAD_IDLE_MS + SETTLE_MS);
const TARGET = '≤ 48 MiB with TLS (Albatross, four daemons: 41.7 MiB)';
/** The V8 flag measured beside the default (see the header). */
const SMALL_YOUNG = '--max-semi-space-size=1';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resident memory of a process from /proc/<pid>/smaps_rollup, in MiB. */
function resident(pid: number): { rss: number; anon: number; file: number } {
  const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kib = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? Number.NaN);
  const rss = kib('Rss') / 1024;
  const anon = kib('Anonymous') / 1024;
  return { rss, anon, file: rss - anon };
}

function report(label: string, pid: number, target = ''): void {
  const { rss, anon, file } = resident(pid);
  console.log(
    `${label}: RSS ${rss.toFixed(1)} MiB (anonymous ${anon.toFixed(1)}, node binary and libraries ${file.toFixed(1)})` +
      `  [${target === '' ? '' : `target ${target}; `}load average ${loadAverage()}]`,
  );
}

/** A process in `netns` that does nothing until killed: the floor of any node program. */
function bareNode(netns: string): ChildProcess {
  return spawn('ip', ['netns', 'exec', netns, process.execPath, '-e', 'setInterval(() => {}, 1 << 30)'], {
    stdio: 'ignore',
  });
}

const dir = await mkdtemp(path.join(tmpdir(), 'petrel-bench-idle-'));
const netns = loopbackNetns();
const stops: (() => Promise<void>)[] = [];
try {
  const files = await pki(dir);
  const at = (port: number) => ({ host: '127.0.0.1', port, ca: files.ca, cert: files.cert, key: files.key });
  const sessions = (port: number) =>
    runWorkers({ server: at(port), kind: 'petrel', clients: 1, sessions: SESSIONS }, 1, {
      netns: netns.name,
    });

  const bare = bareNode(netns.name);
  stops.push(async () => void bare.kill());
  const floor = await startFloorProcess(netns.name, files, 1026);
  stops.push(() => floor.stop());
  /** petreld in `dir/name`, TLS on `port` when `tls`; stopped when the bench ends. */
  const petreld = async (
    name: string,
    tls: boolean,
    port: number,
    env: NodeJS.ProcessEnv = {},
    extra: string[] = [],
  ) => {
    const flags = [...petreldFlags(path.join(dir, name), tls ? files : null, port), ...extra];
    const daemon = await launchDaemon(flags, env, PETRELD, 60_000, netns.name);
    stops.push(() => daemon.stop());
    return daemon;
  };
  const plain = await petreld('plain', false, 1025);
  const tls = await petreld('tls', true, 1025);
  const small = await petreld('small', true, 1027, {
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} ${SMALL_YOUNG}`,
  });
  // The web API on (its listener, and the root statistics subscription its plots sample by).
  const web = await petreld('web', true, 1028, {}, [
    '--web-listen',
    '127.0.0.1:1029',
    '--web-cert',
    files.web,
    '--web-key',
    files.webKey,
  ]);
  console.log(`petreld: ${PETRELD}, runtimes spt; ${SESSIONS} sessions of the petrel client (info as alice)`);

  await sleep(SETTLE_MS);
  report('floor, bare node doing nothing', bare.pid as number);
  report('petreld without TLS, ready', plain.pid);
  report('petreld with TLS, ready', tls.pid, TARGET);
  report(`petreld with TLS, node ${SMALL_YOUNG}, ready`, small.pid, TARGET);
  report('petreld with TLS and the web API (sampling on), ready', web.pid, TARGET);

  const outcomes = [await sessions(1025), await sessions(1027), await sessions(1028), await sessions(1026)];
  const errors = outcomes.flatMap((o) => o.errors);
  if (errors.length > 0) console.log(`errors: ${[...new Set(errors)].slice(0, 3).join('; ')}`);
  await sleep(SETTLE_MS);
  report(`floor, bare node:tls server after ${SESSIONS} sessions`, floor.pid);
  report(`petreld with TLS after ${SESSIONS} sessions`, tls.pid, TARGET);
  report(`petreld with TLS, node ${SMALL_YOUNG}, after ${SESSIONS} sessions`, small.pid, TARGET);
  report(`petreld with TLS and the web API after ${SESSIONS} sessions`, web.pid, TARGET);

  await sleep(IDLE_MS - SETTLE_MS);
  report('floor, bare node:tls server, idle', floor.pid);
  report('petreld without TLS, idle', plain.pid);
  report(`petreld with TLS after ${SESSIONS} sessions, idle`, tls.pid, TARGET);
  report(`petreld with TLS, node ${SMALL_YOUNG}, after ${SESSIONS} sessions, idle`, small.pid, TARGET);
  report(`petreld with TLS and the web API after ${SESSIONS} sessions, idle`, web.pid, TARGET);
} finally {
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
  netns.destroy();
  await rm(dir, { recursive: true, force: true });
}
