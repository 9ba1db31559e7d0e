// Benchmark: a petreld restart with N running unikernels (default 100, BENCH_VMS): the time from
// starting the new petreld until `info` lists all of them, and until every console answers a
// subscription with the unikernel's line in its history; and how many guests were restarted
// (their tender PID changed). Measured after SIGTERM and after SIGKILL of the old petreld (the
// guests run on under the holder and are adopted), and side by side after SIGUSR2, which stops
// every guest as petreld did before issue 17 (the next start boots them all again).
// Goal (issue 17): ≤ 1 s until info and consoles, 0 guests restarted.
// Guests: the hvt canary in `wait` mode under the engine tests' tender (real KVM where it opens,
// else the fake-kvm stand-in, which is printed). Taps none; the daemon runs in its own network
// namespace. Run: npm run build && npm run bench -- restart

import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { commandFrame, open, request, said } from '../test/daemon/client.js';
import { build, canaryImage, repo, testTender } from '../test/engine/guest.js';
import { canaryConfig, createCommand, makeNetns } from '../test/engine/harness.js';
import { loadAverage } from './support/load.js';

const VMS = Number(process.env.BENCH_VMS ?? 100);
const LAUNCHER = path.join(repo, 'test', 'daemon', 'launch.mjs');

const dir = await mkdtemp(path.join(tmpdir(), 'petrel-bench-restart-'));
const netns = makeNetns();
const runDir = path.join(dir, 'run');
const vmmd = path.join(runDir, 'util', 'vmmd.sock');
const consoleSocket = path.join(runDir, 'util', 'console.sock');
// test/native/kvm.ts looks for kvm-probe beside dist/ when compiled; ask it here instead.
const kvm = spawnSync(path.join(build, 'kvm-probe'), ['/dev/kvm'], { stdio: 'ignore' }).status === 0;
const tender = kvm ? path.join(build, 'petrel-hvt') : await testTender(dir);

function startDaemon(): { child: ChildProcess; exited: Promise<void> } {
  const flags = ['--state-dir', `${dir}/state`, '--run-dir', runDir, '--tender-hvt', tender];
  flags.push('--runtimes', 'hvt', '--stop-timeout', '5s', '--log-level', 'warn');
  flags.push(...(process.env.BENCH_DAEMON_FLAGS ?? '').split(' ').filter((f) => f !== ''));
  const child = spawn(process.execPath, [LAUNCHER, ...flags], {
    env: { ...process.env, PETREL_TEST_NETNS: netns.name, PETREL_FAKE_KVM: '1' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { child, exited };
}

/** Tender pid per unikernel, found by its guest argument `wait vm<i>`. */
async function tenderPids(): Promise<Map<string, number>> {
  const found = new Map<string, number>();
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/u.test(pid)) continue;
    const argv = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).split('\0');
    const at = argv.indexOf('wait');
    const word = argv[at + 1];
    if (at > 0 && word?.startsWith(`bench${process.pid}-`)) found.set(word, Number(pid));
  }
  return found;
}

async function infoCount(): Promise<number> {
  try {
    const replies = await request(vmmd, ':', { type: 'unikernel-info', release: '2.7' });
    const payload = replies[0]?.payload;
    return payload?.kind === 'reply' && payload.reply.type === 'unikernel-info'
      ? payload.reply.entries.length
      : -1;
  } catch {
    return -1;
  }
}

/** Resolves once the console of `vm` has sent a line containing `word` (history or live). */
function consoleHas(vm: string, word: string): Promise<void> {
  const watch = open(
    consoleSocket,
    commandFrame(vm, { type: 'console-subscribe', release: '2.1', select: { kind: 'count', count: 20 } }),
  );
  return new Promise((resolve, reject) => {
    const check = setInterval(() => {
      const seen = watch.messages.some(
        (m) =>
          m.payload.kind === 'data' &&
          m.payload.data.type === 'console' &&
          Buffer.from(m.payload.data.line).toString().includes(word),
      );
      if (seen) {
        clearInterval(check);
        watch.close();
        resolve();
      }
    }, 5);
    void watch.closed.then(() => {
      clearInterval(check);
      reject(new Error(`console of ${vm} closed before its line`));
    });
  });
}

const ms = (t0: number) => Math.round(performance.now() - t0);
const words = Array.from({ length: VMS }, (_, i) => `bench${process.pid}-${i}`);

async function restart(signal: 'SIGTERM' | 'SIGKILL' | 'SIGUSR2', old: ReturnType<typeof startDaemon>) {
  const before = await tenderPids();
  old.child.kill(signal);
  await old.exited;
  const t0 = performance.now();
  const next = startDaemon();
  while ((await infoCount()) !== VMS) await new Promise((r) => setTimeout(r, 10));
  const infoMs = ms(t0);
  // A subscription may arrive before the console is attached; retry until each answers.
  await Promise.all(
    words.map(async (word, i) => {
      for (;;) {
        try {
          await consoleHas(`:vm${i}`, word);
          return;
        } catch {
          await new Promise((r) => setTimeout(r, 10));
        }
      }
    }),
  );
  const consolesMs = ms(t0);
  const after = await tenderPids();
  const restarted = words.filter((w) => before.get(w) !== after.get(w)).length;
  const what = signal === 'SIGUSR2' ? 'SIGUSR2 (guests stopped, as before)' : signal;
  console.log(
    `  after ${what}: info lists all ${VMS} after ${infoMs} ms, every console has its line after ${consolesMs} ms; guests restarted: ${restarted} of ${VMS}`,
  );
  return { next, consolesMs };
}

let daemon = startDaemon();
try {
  while ((await infoCount()) < 0) await new Promise((r) => setTimeout(r, 20));
  const config = await canaryConfig(canaryImage, ['wait', 'x']);
  for (const [i, word] of words.entries()) {
    const created = await request(vmmd, `:vm${i}`, createCommand({ ...config, arguments: ['wait', word] }));
    if (said(created[0]) !== 'created unikernel') throw new Error(`create vm${i}: ${said(created[0])}`);
  }
  console.log(
    `restart of petreld with ${VMS} running hvt unikernels (guests: ${kvm ? 'real KVM' : 'fake-kvm.so stands in for KVM'})`,
  );
  const times: Record<string, number> = {};
  for (const signal of ['SIGTERM', 'SIGKILL', 'SIGUSR2'] as const) {
    const done = await restart(signal, daemon);
    daemon = done.next;
    times[signal] = done.consolesMs;
  }
  const ratio = (a: number, b: number) => (a / b).toFixed(2);
  console.log(
    `  goal ≤ 1000 ms and 0 restarted; adopting vs booting again: ${ratio(times.SIGTERM ?? 0, times.SIGUSR2 ?? 1)}× (SIGTERM), ${ratio(times.SIGKILL ?? 0, times.SIGUSR2 ?? 1)}× (SIGKILL)`,
  );
  console.log(`load average: ${loadAverage()}`);
} finally {
  daemon.child.kill('SIGUSR2'); // stops every guest (SIGTERM leaves them to the holder)
  await daemon.exited;
  netns.destroy();
  await rm(dir, { recursive: true, force: true });
}
