// Runs petreld (the compiled daemon in dist/) as a separate process for tests, taking petreld's
// own flags. Environment:
//   PETREL_TEST_NETNS   taps, bridges and tenders live in this network namespace (the test made it)
//   PETREL_CRASH_AT     `<name>@<step>[#n]`: SIGKILL itself the n-th time the engine publishes
//                       that transaction step — a crash at an exact point of a transaction
//   PETREL_TEST_WRITE_FAULT  `<site>[@<path part>][=<errno>][#n]`: that write fails with the errno
//                       (src/host/faults.ts), as a full disk or quota makes it fail
//   PETREL_FAKE_KVM=1   on a host without a usable /dev/kvm (or with PETREL_TEST_NO_KVM=1), the
//                       probe's kvm answer is a TEST DOUBLE, and so is the KVM device the jail
//                       is given (kvmDevice /dev/null unless the flags name one), as with the
//                       fake-kvm tender and testKvmDevice of test/engine/guest.ts
// Prints READY on stdout once started; SIGTERM stops it as petreld does (guests as
// stopGuestsOnExit says), SIGUSR2 stops it with every guest. SIGWINCH (test only): full
// collections and a malloc trim, then COLLECTED on stdout, so a test samples memory that is
// kept, not garbage a busy machine has not collected yet (test/memory.ts).

import { spawnSync } from 'node:child_process';
import diagnostics from 'node:diagnostics_channel';
import pino from 'pino';

const dist = new URL('../../dist/src/', import.meta.url);
const { loadConfig } = await import(new URL('daemon/config.js', dist).href);
const { createDaemon } = await import(new URL('daemon/daemon.js', dist).href);
const { probeHost } = await import(new URL('tender/probe.js', dist).href);

// PETREL_TEST_WRITE_FAULT: a write fails with its errno (src/host/faults.ts says the form).
if (process.env.PETREL_TEST_WRITE_FAULT) {
  const { injectWriteFaults, faultFromSpec } = await import(new URL('host/faults.js', dist).href);
  injectWriteFaults(faultFromSpec(process.env.PETREL_TEST_WRITE_FAULT));
}

const crashAt = process.env.PETREL_CRASH_AT;
if (crashAt) {
  const [point, nth] = crashAt.split('#');
  let seen = 0;
  diagnostics.subscribe('petrel:transaction', ({ name, step }) => {
    if (`${name}@${step}` === point && ++seen === Number(nth ?? 1)) process.kill(process.pid, 'SIGKILL');
  });
}

// The same truth petreld's probe uses: kvm-probe opens the device and asks its API version.
// PETREL_TEST_NO_KVM=1 says no KVM on any host (test/native/kvm.ts).
const kvm =
  process.env.PETREL_TEST_NO_KVM !== '1' &&
  spawnSync(new URL('../../native/build/kvm-probe', import.meta.url).pathname, ['/dev/kvm'], {
    stdio: 'ignore',
  }).status === 0;
const probe = async (options) => {
  if (!faked) return probeHost(options);
  // No SSE guest either: a host without KVM never gets that far.
  const report = await probeHost({ ...options, sseGuest: null });
  const { kvm: _absent, ...problems } = report.problems;
  return { ...report, kvm: true, problems };
};

const loaded = await loadConfig(process.argv.slice(2));
if (!loaded.ok) throw new Error(loaded.error.message);
const faked = !kvm && process.env.PETREL_FAKE_KVM === '1';
// The jail's /dev/kvm is made from this device: /dev/null, never opened (fake-kvm.so answers the
// tender's open of /dev/kvm), is what testKvmDevice gives in-process daemons.
const namesKvmDevice = process.argv.some((arg) => arg === '--kvm-device' || arg.startsWith('--kvm-device='));
const config =
  faked && !namesKvmDevice ? { ...loaded.value.config, kvmDevice: '/dev/null' } : loaded.value.config;
const netns = process.env.PETREL_TEST_NETNS || undefined;
const daemon = createDaemon({
  config,
  log: pino({ level: config.logLevel }, pino.destination(2)),
  ...(netns ? { netns } : {}),
  probe,
});
const started = await daemon.start();
if (!started.ok) {
  process.stderr.write(`start failed: ${started.error.message}\n`);
  process.exit(1);
}
const { collectAndRelease } = await import(new URL('host/garbage.js', dist).href);
process.on('SIGWINCH', () => {
  // Buffer memory is swept on a background thread after a collection: a few rounds, apart.
  let rounds = 0;
  const round = () => {
    collectAndRelease();
    if (++rounds < 3) setTimeout(round, 20);
    else process.stdout.write('COLLECTED\n');
  };
  round();
});
process.stdout.write('READY\n');
process.once('SIGTERM', () => daemon.stop().then(() => process.exit(0)));
process.once('SIGUSR2', () => daemon.stop({ stopGuests: true }).then(() => process.exit(0)));
