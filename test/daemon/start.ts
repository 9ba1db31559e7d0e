// Starts petreld in-process on temporary directories for tests: its own network namespace, the
// test tender and, on hosts without /dev/kvm, the probe's kvm answer replaced (TEST DOUBLE,
// matching the fake-kvm tender of test/engine/guest.ts). With KVM everything is real.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino, { type Logger } from 'pino';
import { buildConfig } from '../../src/daemon/config.js';
import { createDaemon, type Daemon, type StartReport } from '../../src/daemon/daemon.js';
import type { PetrelError, Result } from '../../src/resources/errors.js';
import { unwrap } from '../../src/resources/errors.js';
import { probeWithFakeKvm as probe, testKvmDevice, testTender } from '../engine/guest.js';
import { makeNetns } from '../engine/harness.js';

/**
 * Creates and starts a daemon with `<dir>/state` and `<dir>/run`; `flags` are petreld's
 * configuration keys (tenderHvt defaults to the test tender written into `dir`). The boot
 * canary is the built one, native/build/canary.hvt.
 */
export async function startDaemon(
  dir: string,
  netns: string,
  flags: Record<string, string> = {},
  canaryImages?: Partial<Record<'hvt' | 'spt', string>>,
  /** The host's own probe when a test needs its real kvm answer, not the test double's. */
  hostProbe: typeof probe = probe,
  /** Silent unless PETREL_TEST_LOG names a level. */
  log: Logger = pino({ level: process.env.PETREL_TEST_LOG ?? 'silent' }),
): Promise<{ daemon: Daemon; started: Result<StartReport, PetrelError> }> {
  const tender = flags.tenderHvt ?? (await testTender(dir));
  const config = unwrap(
    buildConfig({
      flags: {
        stateDir: path.join(dir, 'state'),
        runDir: path.join(dir, 'run'),
        tenderHvt: tender,
        kvmDevice: testKvmDevice,
        canaryDeadline: '3s',
        stopTimeout: '2s',
        ...flags,
      },
    }),
  );
  const daemon = createDaemon({
    config,
    log,
    netns,
    probe: hostProbe,
    ...(canaryImages === undefined ? {} : { canaryImages }),
  });
  return { daemon, started: await daemon.start() };
}

export interface TestDaemon {
  readonly daemon: Daemon;
  readonly report: StartReport;
  /** The temporary directory: `state/`, `run/` and whatever `prepare` put there. */
  readonly dir: string;
  readonly runDir: string;
  /** `state/`: Petrel's state (read it with storedState of test/engine/harness.ts). */
  readonly stateDir: string;
  /** Stops the daemon with its guests, removes the namespace and the directory. */
  stop(): Promise<void>;
}

/**
 * A started daemon on a fresh temporary directory (`<tmp>/<prefix>…`) and namespace: `prepare`
 * is given the directory and answers the daemon's flags. Everything is removed again by stop(),
 * or at once when `prepare` or the start fails.
 */
export async function freshDaemon(
  prefix: string,
  prepare: (dir: string) => Promise<Record<string, string>>,
  log?: Logger,
): Promise<TestDaemon> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  const netns = makeNetns();
  let daemon: Daemon | undefined;
  const stop = async () => {
    try {
      await daemon?.stop({ stopGuests: true });
    } finally {
      netns.destroy();
      await rm(dir, { recursive: true, force: true });
    }
  };
  try {
    const made = await startDaemon(dir, netns.name, await prepare(dir), undefined, probe, log);
    daemon = made.daemon;
    if (!made.started.ok) throw new Error(`petreld did not start: ${made.started.error.message}`);
    const report = made.started.value;
    return { daemon, report, dir, runDir: path.join(dir, 'run'), stateDir: path.join(dir, 'state'), stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** A started daemon on a fresh temporary directory and namespace; stop() removes everything. */
export function testDaemon(flags: Record<string, string> = {}): Promise<TestDaemon> {
  return freshDaemon('petreld-', async () => flags);
}
