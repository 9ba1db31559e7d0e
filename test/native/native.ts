// Paths of the built native binaries and helpers that run them and judge the outcome.
// The binaries come from `npm run build:native` (make -C native); tests never build them.
import { type SpawnOptions, spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { kvmUsable } from './kvm.js';

export const build = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'native', 'build');

export const tender = join(build, 'petrel-hvt');
export const canary = join(build, 'canary.hvt');
export const canaryBlk = join(build, 'canary-blk.hvt');
export const canaryNet = join(build, 'canary-net.hvt');
export const tapPeer = join(build, 'tap-peer');
export const fakeKvm = join(build, 'fake-kvm.so');
export const seccompProbe = join(build, 'seccomp-probe.so');

export function requireBuilt(): void {
  for (const f of [tender, canary, canaryBlk, canaryNet, tapPeer, fakeKvm, seccompProbe]) {
    if (!existsSync(f)) throw new Error(`${f} is missing: run \`npm run build:native\` first`);
  }
}

export interface Outcome {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to completion (killed after timeoutMs). */
export function runSync(
  cmd: string,
  args: readonly string[],
  timeoutMs = 20_000,
  env: NodeJS.ProcessEnv = process.env,
): Outcome {
  const r = spawnSync(cmd, args, { encoding: 'latin1', timeout: timeoutMs, killSignal: 'SIGKILL', env });
  if (r.error && !r.signal) throw r.error;
  return { status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

export function runTender(args: readonly string[], timeoutMs?: number): Outcome {
  return runSync(tender, args, timeoutMs);
}

/** A tender-side failure: exit 1 and the message on a line of its own, after the program prefix. */
export function expectFailure(r: Outcome, message: string): void {
  expect(r.stderr.split('\n')).toContain(`petrel-hvt: ${message}`);
  expect(r.status).toBe(1);
}

const kvmMissing = /^petrel-hvt: Could not open: \/dev\/kvm: .+$/m;

/**
 * Everything before step 6 of solo5.md §1.8 succeeded. Where KVM works the guest then ran and
 * exited with guestStatus; where it does not, the tender stopped at /dev/kvm with status 1.
 */
export function expectReachedKvm(r: Outcome, guestStatus: number): void {
  if (kvmUsable) {
    expect(r.stderr).not.toMatch(kvmMissing);
    expect(r.status).toBe(guestStatus);
  } else {
    expect(r.stderr).toMatch(kvmMissing);
    expect(r.status).toBe(1);
  }
}

export interface Running {
  readonly pid: number;
  readonly stdout: () => string;
  readonly stderr: () => string;
  /** Resolves once stdout contains the text; rejects if the process ends first or after timeoutMs. */
  readonly waitFor: (text: string, timeoutMs?: number) => Promise<void>;
  readonly exited: Promise<{ status: number | null; signal: NodeJS.Signals | null; at: number }>;
  /** SIGKILL if still running; safe to call twice. */
  readonly stop: () => void;
}

/** Starts a long-running process; stdout and stderr are collected as they arrive. */
export function start(cmd: string, args: readonly string[], options: SpawnOptions = {}): Running {
  const child = spawn(cmd, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  let done = false;
  const waiters = new Set<() => void>();
  child.stdout?.setEncoding('latin1').on('data', (d: string) => {
    out += d;
    for (const w of waiters) w();
  });
  child.stderr?.setEncoding('latin1').on('data', (d: string) => {
    err += d;
  });
  const exited = new Promise<{ status: number | null; signal: NodeJS.Signals | null; at: number }>(
    (resolve, reject) => {
      child.on('error', reject);
      // The exit's time and status, but resolved once its output is all read: 'exit' may come
      // before the last of stdout (seen on a loaded machine: a tap-peer's reply line missing).
      let ended: { status: number | null; signal: NodeJS.Signals | null; at: number } | null = null;
      child.on('exit', (status, signal) => {
        ended = { status, signal, at: performance.now() };
      });
      child.on('close', (status, signal) => {
        done = true;
        for (const w of waiters) w();
        resolve(ended ?? { status, signal, at: performance.now() });
      });
    },
  );
  if (child.pid === undefined) throw new Error(`could not start ${cmd}`);
  const pid = child.pid;
  return {
    pid,
    stdout: () => out,
    stderr: () => err,
    exited,
    stop: () => {
      if (!done) child.kill('SIGKILL');
    },
    waitFor: (text, timeoutMs = 10_000) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`timed out waiting for ${JSON.stringify(text)}; stdout ${out} stderr ${err}`));
        }, timeoutMs);
        function check(): void {
          if (out.includes(text)) {
            clearTimeout(timer);
            waiters.delete(check);
            resolve();
          } else if (done) {
            clearTimeout(timer);
            waiters.delete(check);
            reject(new Error(`exited before ${JSON.stringify(text)}; stdout ${out} stderr ${err}`));
          }
        }
        waiters.add(check);
        check();
      }),
  };
}

/**
 * Sends `signal` (number `n`) to a running petrel-hvt: it must end within 100 ms with status 1,
 * saying which signal ended it, as solo5-hvt does.
 */
export async function expectExitOnSignal(t: Running, signal: NodeJS.Signals, n: number): Promise<void> {
  const sent = performance.now();
  process.kill(t.pid, signal);
  const end = await t.exited;
  expect(end.at - sent).toBeLessThan(100);
  expect(end).toMatchObject({ status: 1, signal: null });
  expect(t.stderr()).toBe(`petrel-hvt: Exiting on signal ${n}\n`);
}

/** The canary's `exit N` and the status a tender exits with then: N & 0xff. */
export const EXIT_STATUSES: [string, number][] = [
  ['42', 42],
  ['0', 0],
  ['300', 44],
  ['256', 0],
  ['-1', 255],
];

/** True while the process exists and is not a zombie (a zombie has already died). */
export function alive(pid: number): boolean {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return false;
  }
  const state = stat.charAt(stat.lastIndexOf(')') + 2);
  return state !== 'Z' && state !== 'X';
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The environment that makes petrel-hvt talk to the scripted fake /dev/kvm (native/tools/fake-kvm.c). */
export function fakeKvmEnv(script: string, files: { log?: string; dump?: string } = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    LD_PRELOAD: fakeKvm,
    FAKEKVM_SCRIPT: script,
    ...(files.log ? { FAKEKVM_LOG: files.log } : {}),
    ...(files.dump ? { FAKEKVM_DUMP: files.dump } : {}),
  };
}

/**
 * A check solo5-hvt makes only after /dev/kvm is open (segments, devices, command line; §1.8
 * steps 7-10). Where KVM works, the real run must fail with the message. Where it does not, the
 * real run must stop at /dev/kvm first (the check was not moved ahead of it), and a run against
 * the fake /dev/kvm must fail with the message.
 */
export function expectLateFailure(args: readonly string[], message: string): Outcome {
  if (kvmUsable) {
    const r = runTender(args);
    expectFailure(r, message);
    return r;
  }
  expectReachedKvm(runTender(args), 1);
  const r = runSync(tender, args, 20_000, fakeKvmEnv(''));
  expectFailure(r, message);
  return r;
}

/** Resolves true once the process is gone (or a zombie), false if it is still alive after withinMs. */
export async function gone(pid: number, withinMs: number): Promise<boolean> {
  const until = performance.now() + withinMs;
  while (alive(pid) && performance.now() < until) await sleep(5);
  return !alive(pid);
}

/**
 * Runs a tender (default petrel-hvt) as the child of a shell the test can kill, to test the
 * parent-death signal. The shell prints "pid N" (the tender's PID), then waits; the tender's
 * stdout is the shell's. The caller must end both: the shell is a Running, the tender a PID (no
 * longer our child once the shell is dead).
 */
export async function underShell(
  args: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  program: string = tender,
): Promise<{ shell: Running; tenderPid: number }> {
  const shell = start('sh', ['-c', '"$0" "$@" & echo "pid $!"; wait', program, ...args], { env });
  // The tender shares the shell's stdout and may print first; echo writes its line in one piece.
  await shell.waitFor('pid ');
  const m = /^pid (\d+)$/m.exec(shell.stdout());
  if (!m) {
    shell.stop();
    throw new Error(`no tender PID from the shell: ${shell.stdout()}`);
  }
  return { shell, tenderPid: Number(m[1]) };
}
