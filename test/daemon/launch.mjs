// Runs petreld (the compiled daemon in dist/) for the crash-safety tests, in a network namespace
// the test made. With PETREL_CRASH_AT=<name>@<step> it kills itself with SIGKILL the moment the
// engine publishes that transaction step: a crash at an exact point of a transaction.
// On hosts without /dev/kvm the probe's kvm answer is a TEST DOUBLE (as in test/engine/guest.ts).
import diagnostics from 'node:diagnostics_channel';
import { closeSync, openSync } from 'node:fs';
import pino from 'pino';

const dist = new URL('../../dist/src/', import.meta.url);
const { buildConfig } = await import(new URL('daemon/config.js', dist).href);
const { createDaemon } = await import(new URL('daemon/daemon.js', dist).href);
const { probeHost } = await import(new URL('tender/probe.js', dist).href);

// `<name>@<step>` or `<name>@<step>#<n>` for the n-th time that step is reached.
const crashAt = process.env.PETREL_CRASH_AT;
if (crashAt) {
  const [point, nth] = crashAt.split('#');
  let seen = 0;
  diagnostics.subscribe('petrel:transaction', ({ name, step }) => {
    if (`${name}@${step}` === point && ++seen === Number(nth ?? 1)) process.kill(process.pid, 'SIGKILL');
  });
}

let kvm = true;
try {
  closeSync(openSync('/dev/kvm', 'r+'));
} catch {
  kvm = false;
}
const probe = async (options) => {
  const report = await probeHost(options);
  if (kvm) return report;
  const { kvm: _absent, ...problems } = report.problems;
  return { ...report, kvm: true, problems };
};

const [stateDir, runDir, tenderHvt, netns] = process.argv.slice(2);
const config = buildConfig({
  flags: { stateDir, runDir, tenderHvt, stopTimeout: '2s', canaryDeadline: '5s' },
});
if (!config.ok) throw new Error(config.error.message);
const daemon = createDaemon({
  config: config.value,
  log: pino({ level: 'warn' }, pino.destination(2)),
  netns,
  probe,
});
const started = await daemon.start();
if (!started.ok) {
  process.stderr.write(`start failed: ${started.error.message}\n`);
  process.exit(1);
}
process.stdout.write('READY\n');
process.once('SIGTERM', () => daemon.stop().then(() => process.exit(0)));
