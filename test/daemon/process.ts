// petreld as a separate process for tests and benchmarks (its RSS and its crashes are its own):
// test/daemon/launch.mjs by default (it prints READY), or petreld itself (it logs `petreld
// ready`), optionally inside a network namespace the caller made (`ip netns exec`, which execs:
// the pid is the daemon's). Resolves once ready; stop() sends SIGUSR2 (every guest stopped) or
// the signal given (SIGTERM: guests left to the holder, Petrel (k)) to that pid and waits.
import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { repo } from '../engine/guest.js';

export const LAUNCHER = path.join(repo, 'test', 'daemon', 'launch.mjs');

export interface DaemonProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** What it wrote on stderr so far. */
  stderr(): string;
  stop(signal?: 'SIGUSR2' | 'SIGTERM'): Promise<void>;
  /**
   * Full collections and a malloc trim in petreld, resolved once done (launch.mjs only: its
   * SIGWINCH hook; petreld itself has none).
   */
  collect(): Promise<void>;
}

export function launchDaemon(
  flags: readonly string[],
  env: NodeJS.ProcessEnv = {},
  script: string = LAUNCHER,
  readyMs = 30_000,
  netns?: string,
  /** Flags for node itself (e.g. `--cpu-prof`, which NODE_OPTIONS refuses). */
  nodeFlags: readonly string[] = [],
): Promise<DaemonProcess> {
  const argv = [process.execPath, ...nodeFlags, script, ...flags];
  const [command, ...args] = netns === undefined ? argv : ['ip', 'netns', 'exec', netns, ...argv];
  const child = spawn(command as string, args, {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let errors = '';
  child.stderr?.on('data', (d) => {
    errors += d;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const handle: DaemonProcess = {
    child,
    pid: child.pid as number,
    exited,
    stderr: () => errors,
    async stop(signal = 'SIGUSR2') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
    collect() {
      return new Promise<void>((resolve, reject) => {
        const heard = (d: Buffer) => {
          if (!d.toString().includes('COLLECTED')) return;
          child.stdout?.off('data', heard);
          resolve();
        };
        child.stdout?.on('data', heard);
        if (!child.kill('SIGWINCH')) reject(new Error('petreld is not running'));
      });
    },
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`petreld not ready within ${readyMs} ms: ${errors}`)),
      readyMs,
    );
    child.stdout?.on('data', (d: Buffer) => {
      const text = d.toString();
      if (text.includes('READY') || text.includes('"msg":"petreld ready"')) {
        clearTimeout(timer);
        resolve(handle);
      }
    });
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`petreld exited ${code ?? signal} before it was ready: ${errors}`));
    });
  });
}
