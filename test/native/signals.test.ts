// How petrel-hvt ends (solo5.md §1.9, §1.11; petrel-differences.md (e)): SIGTERM/SIGINT after
// the handler is installed (step 4 of §1.8) exit 1 with "Exiting on signal N" within
// milliseconds; before it they kill by the signal, as with solo5-hvt; and the death of the
// parent ends the tender whatever it is doing.
//
// Without KVM the tender can still be caught alive before step 4: a FIFO as KERNEL blocks its
// open(2) in step 2 until a writer comes, which no one does here.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { kvmUsable } from './kvm.js';
import {
  alive,
  canary,
  expectExitOnSignal,
  gone,
  type Running,
  requireBuilt,
  sleep,
  start,
  tender,
  underShell,
} from './native.js';

let dir: string;
let fifo: string;
const running: Running[] = [];
const orphans: number[] = [];

beforeAll(() => {
  requireBuilt();
  dir = mkdtempSync(join(tmpdir(), 'petrel-hvt-signals-'));
  fifo = join(dir, 'kernel.fifo');
  execFileSync('mkfifo', [fifo]);
});
afterEach(() => {
  for (const r of running.splice(0)) r.stop();
  // Tenders whose parent the test killed are no longer our children: end them by PID.
  for (const pid of orphans.splice(0)) if (alive(pid)) process.kill(pid, 'SIGKILL');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Resolves once the process sits in open/openat (x86_64 syscalls 2 and 257). */
async function blockedInOpen(pid: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    try {
      const nr = readFileSync(`/proc/${pid}/syscall`, 'utf8').split(' ')[0];
      if (nr === '257' || nr === '2') return;
    } catch {
      // not started yet, or not readable
    }
    await sleep(10);
  }
  throw new Error(`process ${pid} never blocked in open`);
}

/** The tender under a killable shell; both are ended after the test. */
async function tenderUnderShell(args: readonly string[]): Promise<{ shell: Running; tenderPid: number }> {
  const r = await underShell(args);
  running.push(r.shell);
  orphans.push(r.tenderPid);
  return r;
}

describe('before the handler is installed (step 4)', () => {
  it('SIGTERM kills the tender by the signal, as it would solo5-hvt', async () => {
    const t = start(tender, ['--mem=2', fifo]);
    running.push(t);
    await blockedInOpen(t.pid);
    process.kill(t.pid, 'SIGTERM');
    expect(await t.exited).toMatchObject({ status: null, signal: 'SIGTERM' });
    expect(t.stderr()).toBe('');
  });

  it('the death of its parent ends the tender (parent-death signal set first thing)', async () => {
    const { shell, tenderPid } = await tenderUnderShell(['--mem=2', fifo]);
    await blockedInOpen(tenderPid);
    process.kill(shell.pid, 'SIGKILL');
    await shell.exited;
    expect(await gone(tenderPid, 1000)).toBe(true);
  });
});

describe.skipIf(!kvmUsable)('with a guest running', () => {
  it.each([
    ['SIGTERM', 15],
    ['SIGINT', 2],
  ] as const)(
    '%s ends the tender within 100 ms with status 1 and "Exiting on signal %i"',
    async (signal, n) => {
      const t = start(tender, ['--mem=2', canary, 'wait', 'ready']);
      running.push(t);
      await t.waitFor('petrel-canary ready\n');
      await sleep(50); // let the guest settle into POLL
      await expectExitOnSignal(t, signal, n);
    },
  );

  it('the death of its parent ends a running tender', async () => {
    const { shell, tenderPid } = await tenderUnderShell(['--mem=2', canary, 'wait', 'ready']);
    await shell.waitFor('petrel-canary ready\n');
    process.kill(shell.pid, 'SIGKILL');
    await shell.exited;
    expect(await gone(tenderPid, 1000)).toBe(true);
  });
});
