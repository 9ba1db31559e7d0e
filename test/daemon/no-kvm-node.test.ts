// petreld on a host whose kernel binds no KVM, so that there is no /dev/kvm node at all — on
// every host the suite runs on: scripts/kvm-host.sh no-node gives the real petreld (dist/, the
// real probe, the real jail, no test double) a /dev of its own without that node. The host's own
// /dev is never changed. `--runtimes spt` runs without the device, `--runtimes hvt` refuses to
// start naming it, `--runtimes auto` serves spt and refuses hvt.

import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { canaryImage, repo, sptCanary } from '../engine/guest.js';
import { canaryConfig, createCommand } from '../engine/harness.js';
import { request, said } from './client.js';

const petreld = path.join(repo, 'dist', 'src', 'cli', 'petreld.js');
const kvmHost = path.join(repo, 'scripts', 'kvm-host.sh');

interface Run {
  readonly child: ChildProcess;
  readonly dir: string;
  /** Every JSON log line so far. */
  readonly lines: Record<string, unknown>[];
  readonly stderr: () => string;
  readonly exited: Promise<number | null>;
}

let base: string;
let runs = 0;
const running: Run[] = [];
beforeAll(async () => {
  base = await mkdtemp(path.join(tmpdir(), 'petrel-nokvm-'));
});
afterEach(async () => {
  for (const run of running.splice(0)) {
    // SIGUSR2 is not petreld's: SIGTERM, then every tender it left is the holder's to end.
    if (run.child.exitCode === null) run.child.kill('SIGTERM');
    await run.exited;
  }
});
afterAll(() => rm(base, { recursive: true, force: true }));

/** The real petreld, in a private mount namespace whose /dev has no kvm node. */
function start(runtimes: string): Run {
  const dir = path.join(base, `d${runs++}`);
  const child = spawn(
    'bash',
    [
      kvmHost,
      'no-node',
      '--',
      process.execPath,
      petreld,
      '--runtimes',
      runtimes,
      '--state-dir',
      `${dir}/state`,
      '--run-dir',
      `${dir}/run`,
      // The holder and its tenders go with petreld: nothing outlives the test.
      '--stop-guests-on-exit',
      'true',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const lines: Record<string, unknown>[] = [];
  let pending = '';
  let stderr = '';
  const take = (d: Buffer) => {
    pending += d.toString();
    const parts = pending.split('\n');
    pending = parts.pop() ?? '';
    for (const part of parts) {
      try {
        lines.push(JSON.parse(part));
      } catch {
        stderr += `${part}\n`;
      }
    }
  };
  child.stdout?.on('data', take);
  child.stderr?.on('data', take);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const run = { child, dir, lines, stderr: () => stderr, exited };
  running.push(run);
  return run;
}

async function ready(run: Run): Promise<Record<string, unknown>> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const line = run.lines.find((l) => l.msg === 'petreld ready');
    if (line) return line;
    if (run.child.exitCode !== null) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`petreld not ready: ${JSON.stringify(run.lines.at(-1))}\n${run.stderr()}`);
}

const kvmRow = (run: Run) => run.lines.find((l) => l.msg === 'preflight' && l.check === 'kvm');
const hvtCreate = async (run: Run) =>
  (
    await request(
      path.join(run.dir, 'run', 'util', 'vmmd.sock'),
      ':vm',
      createCommand(await canaryConfig(canaryImage, ['wait', 'x'])),
    )
  ).map(said);

describe('petreld where there is no /dev/kvm node (scripts/kvm-host.sh no-node)', () => {
  it('the namespace has no /dev/kvm while the host keeps its own', async () => {
    const had = existsSync('/dev/kvm');
    const child = spawn('bash', [kvmHost, 'no-node', '--', 'test', '-e', '/dev/kvm']);
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).toBe(1);
    expect(existsSync('/dev/kvm')).toBe(had);
  });

  it('--runtimes spt starts without the device: boots its spt canary, kvm only a warning', async () => {
    const run = start('spt');
    expect((await ready(run)).runtimes).toEqual(['spt']);
    expect(kvmRow(run)).toMatchObject({
      status: 'WARN',
      detail: expect.stringMatching(/^\/dev\/kvm cannot be opened: No such file or directory/u),
    });
    expect(run.lines.find((l) => l.msg === 'boot canary ran')).toMatchObject({ runtime: 'spt' });
    const node = JSON.parse(await readFile(path.join(run.dir, 'run', 'node.json'), 'utf8'));
    expect(node.runtimes).toEqual(['spt']);
    // A real spt unikernel runs there.
    const replies = await request(
      path.join(run.dir, 'run', 'util', 'vmmd.sock'),
      ':spt',
      createCommand(await canaryConfig(sptCanary, ['wait', 's'])),
    );
    expect(replies.map(said)).toEqual(['created unikernel']);
    expect(await hvtCreate(run)).toEqual(['Failure: this node does not run hvt unikernels (--runtimes spt)']);
  });

  it('--runtimes hvt refuses to start, naming /dev/kvm, and leaves no node record', async () => {
    const run = start('hvt');
    expect(await run.exited).not.toBe(0);
    expect(kvmRow(run)).toMatchObject({ status: 'FAIL' });
    expect(run.stderr()).toContain(
      'preflight failed:\n  kvm: /dev/kvm cannot be opened: No such file or directory',
    );
    expect(existsSync(path.join(run.dir, 'run', 'node.json'))).toBe(false);
  });

  it('--runtimes auto serves spt and refuses hvt, saying which runtime was left out and why', async () => {
    const run = start('auto');
    expect((await ready(run)).runtimes).toEqual(['spt']);
    expect(run.lines.find((l) => l.msg === 'preflight' && l.check === 'runtimes')).toMatchObject({
      detail: 'auto: hosts spt (hvt left out: kvm WARN)',
    });
    expect(kvmRow(run)).toMatchObject({
      status: 'WARN',
      detail: expect.stringMatching(/^\/dev\/kvm cannot be opened: No such file or directory/u),
    });
    expect(await hvtCreate(run)).toEqual(['Failure: this node does not run hvt unikernels (--runtimes spt)']);
  });
});
