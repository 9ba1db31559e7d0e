// Shared by the console tests that run a real spt canary under petreld: petreld as its own
// process (its RSS is then its own), spt runtime only, and subscribers in their own processes.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type DaemonProcess, launchDaemon } from '../daemon/process.js';
import { repo } from '../engine/guest.js';
import { makeNetns } from '../engine/harness.js';

const reader = path.join(repo, 'test', 'console', 'reader.mjs');

/** Starts petreld; what to undo goes on `cleanups` (run in reverse order). */
export async function sptDaemon(
  prefix: string,
  cleanups: (() => Promise<void> | void)[],
): Promise<{ runDir: string; pid: number; process: DaemonProcess }> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  const netns = makeNetns();
  cleanups.push(
    () => rm(dir, { recursive: true, force: true }),
    () => netns.destroy(),
  );
  const d = await launchDaemon(
    ['--state-dir', `${dir}/state`, '--run-dir', `${dir}/run`, '--runtimes', 'spt', '--log-level', 'warn'],
    { PETREL_TEST_NETNS: netns.name },
  );
  cleanups.push(() => d.stop());
  return { runDir: `${dir}/run`, pid: d.pid, process: d };
}

/** test/console/reader.mjs on `vm`, expecting `lines` flood lines; killed by the caller. */
export function floodReader(
  socket: string,
  vm: string,
  lines: number,
  silent: boolean,
  children: ChildProcess[],
) {
  const child = spawn(process.execPath, [reader, socket, vm, String(lines), ...(silent ? ['silent'] : [])], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  let out = '';
  const subscribed = new Promise<void>((resolve) =>
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('SUBSCRIBED')) resolve();
    }),
  );
  const summary = new Promise<Record<string, unknown>>((resolve) =>
    child.once('exit', () => resolve(JSON.parse(out.trim().split('\n').pop() ?? '{}'))),
  );
  return { subscribed, summary, wake: () => child.kill('SIGUSR2') };
}
