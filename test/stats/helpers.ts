// Shared pieces of the statistics tests: stand-in "VMs" (ordinary processes the test starts and
// kills by PID), frames sent into a tap, and the statistics frames a subscription received.

import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { printName } from '../../src/resources/name.js';
import type { StatsData, Wire } from '../../src/wire/types.js';
import { tapPeer } from '../native/native.js';

/** Processes started by a test, killed by PID afterwards. */
export class Processes {
  readonly #children: ChildProcess[] = [];

  start(cmd: string, args: readonly string[]): number {
    const child = spawn(cmd, [...args], { stdio: 'ignore' });
    if (child.pid === undefined) throw new Error(`could not start ${cmd}`);
    child.on('error', () => undefined);
    this.#children.push(child);
    return child.pid;
  }

  /** A process that burns CPU until killed. */
  busy(): number {
    return this.start('sh', ['-c', 'while :; do :; done']);
  }

  /** A process that sleeps, standing in for a tender waiting on its guest. */
  idle(): number {
    return this.start('sleep', ['30']);
  }

  killAll(): void {
    for (const child of this.#children.splice(0)) {
      if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
        process.kill(child.pid, 'SIGKILL');
      }
    }
  }
}

/** Runs `ip -n NETNS args` for each argument list, throwing on the first failure. */
export function ipIn(netns: string, ...commands: readonly string[][]): void {
  for (const args of commands) {
    const r = spawnSync('ip', ['-n', netns, ...args], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`ip ${args.join(' ')}: ${r.stderr}`);
  }
}

/**
 * Writes broadcast frames of EtherType 88b5 into `tap` (inside `netns`) for about `ms`: the
 * kernel counts them as received on that tap, and a bridge floods them to its other ports.
 * tap-peer sends one every 200 ms and exits 2 when nobody answers, which is expected here.
 */
export async function sendFrames(netns: string, tap: string, ms = 700): Promise<void> {
  const frame = `ffffffffffff02000000000188b5${'00'.repeat(46)}`;
  const child = spawn(
    'ip',
    ['netns', 'exec', netns, tapPeer, tap, 'xchg', frame, '88b5', '02:00:00:00:00:99', String(ms)],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const status = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  if (status !== 2) throw new Error(`tap-peer ${tap}: status ${status}: ${stderr}`);
}

export interface Received {
  readonly name: string;
  readonly wire: Wire;
  readonly stats: StatsData;
}

/** The statistics data frames among `messages`. */
export function statsOf(messages: readonly Wire[]): Received[] {
  return messages.flatMap((wire) =>
    wire.payload.kind === 'data' && wire.payload.data.type === 'statistics'
      ? [{ name: printName(wire.header.name), wire, stats: wire.payload.data.stats }]
      : [],
  );
}

/** CPU time (user + system) of a sample, in microseconds. */
export function cpuMicros(stats: StatsData): bigint {
  const { utime, stime } = stats.rusage;
  return (utime.seconds + stime.seconds) * 1_000_000n + BigInt(utime.microseconds + stime.microseconds);
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` until it holds or `timeoutMs` passes. */
export async function until(check: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}
