// Starts petreld in-process on temporary directories for tests: its own network namespace, the
// test tender and, on hosts without /dev/kvm, the probe's kvm answer replaced (TEST DOUBLE,
// matching the fake-kvm tender of test/engine/guest.ts). With KVM everything is real.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
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
    log: pino({ level: process.env.PETREL_TEST_LOG ?? 'silent' }),
    netns,
    probe: hostProbe,
    ...(canaryImages === undefined ? {} : { canaryImages }),
  });
  return { daemon, started: await daemon.start() };
}

export interface TestDaemon {
  readonly daemon: Daemon;
  readonly report: StartReport;
  readonly dir: string;
  readonly runDir: string;
  stop(): Promise<void>;
}

/** A started daemon on a fresh temporary directory and namespace; stop() removes everything. */
export async function testDaemon(flags: Record<string, string> = {}): Promise<TestDaemon> {
  const dir = await mkdtemp(path.join(tmpdir(), 'petreld-'));
  const netns = makeNetns();
  const cleanUp = async (daemon?: Daemon) => {
    await daemon?.stop({ stopGuests: true });
    netns.destroy();
    await rm(dir, { recursive: true, force: true });
  };
  const { daemon, started } = await startDaemon(dir, netns.name, flags).catch(async (e: unknown) => {
    await cleanUp();
    throw e;
  });
  if (!started.ok) {
    await cleanUp(daemon);
    throw new Error(`petreld did not start: ${started.error.message}`);
  }
  return { daemon, report: started.value, dir, runDir: path.join(dir, 'run'), stop: () => cleanUp(daemon) };
}
