#!/usr/bin/env node
// The `petreld` daemon executable: `petreld [flags]` starts the daemon (probe, preflight, canary,
// ready for clients); `petreld check [flags]` runs the probe and preflight only; `petreld
// export-state FILE` writes the state as an Albatross state file, offline.

import path from 'node:path';
import { configHelp, loadConfig, type PetrelConfig } from '../daemon/config.js';
import { createDaemon } from '../daemon/daemon.js';
import { createLogger } from '../daemon/logger.js';
import { checkHost, formatChecks, preflightError } from '../daemon/preflight.js';
import { runSeparateTlsEndpoint } from '../daemon/tls-endpoint.js';
import { TLS_ENDPOINT_USAGE } from '../tls/cli.js';

/** Exit statuses by failure kind, so service managers and scripts can tell them apart. */
const EXIT = { OK: 0, FAILED: 1, CONFIG: 2, PREFLIGHT: 3, CANARY: 4 } as const;

const USAGE = `usage: petreld [check | export-state FILE] [--config FILE] [flags]

  petreld          probe the host, refuse to start naming anything the configured runtimes
                   need and the host lacks, restore the state, boot the canary, serve clients
  petreld check    probe and print the preflight table (PASS/FAIL/WARN with fix hints);
                   exits 3 when a required check fails
  petreld export-state FILE
                   write the state of --state-dir as an Albatross state file (version 6,
                   images embedded) to FILE; offline: refused while a petreld uses the directory
                   (to bring one in: petreld --import-albatross-state FILE)
  petreld tls-endpoint --run-dir DIR --ca FILE --cert FILE --key FILE ...
                   only the mutual-TLS endpoint, as its own (unprivileged) process, in front
                   of the sockets of a petreld running on DIR (--help for its flags)

examples:
  petreld --state-dir ./state --run-dir ./run
  petreld --config /etc/petrel/petreld.toml --tls-listen [::]:1025
  petreld check --runtimes hvt,spt
  petreld export-state --state-dir /var/lib/petrel /backup/albatross-state

`;

async function main(argv: readonly string[]): Promise<number> {
  // The endpoint takes its own flags (Albatross' `CA CERT KEY` too), not the daemon's.
  if (argv[0] === 'tls-endpoint') return tlsEndpoint(argv.slice(1));
  const loaded = await loadConfig(argv);
  if (!loaded.ok) {
    process.stderr.write(`petreld: ${loaded.error.message}\n`);
    return EXIT.CONFIG;
  }
  const { config, positionals, help } = loaded.value;
  if (help) {
    process.stdout.write(USAGE + configHelp());
    return EXIT.OK;
  }
  const [mode, ...extra] = positionals;
  if (mode === 'export-state') {
    if (extra.length !== 1) {
      process.stderr.write(`petreld: export-state needs one FILE\n\n${USAGE}`);
      return EXIT.CONFIG;
    }
    return exportStateFile(config, extra[0] as string);
  }
  if (extra.length > 0 || (mode !== undefined && mode !== 'check')) {
    process.stderr.write(`petreld: unexpected argument ${JSON.stringify(mode ?? extra[0])}\n\n${USAGE}`);
    return EXIT.CONFIG;
  }
  if (mode === 'check') {
    const { results } = await checkHost(config);
    process.stdout.write(formatChecks(results));
    return preflightError(results) === null ? EXIT.OK : EXIT.PREFLIGHT;
  }

  const log = createLogger({ level: config.logLevel, format: config.logFormat });
  const daemon = createDaemon({ config, log });
  // The handlers are in place before the start: a stop that comes during it (a service manager
  // stopping right after it started us) is carried out once the start is done, not met by the
  // default action, which would end petreld in the middle of its work.
  let signalled: ((signal: NodeJS.Signals) => void) | null = null;
  let early: NodeJS.Signals | null = null;
  const onSignal = (signal: NodeJS.Signals) => {
    if (signalled !== null) signalled(signal);
    else if (early === null) {
      early = signal;
      log.info({ signal }, 'stop requested during the start: stopping once started');
    }
  };
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGUSR2'] as const) process.once(signal, onSignal);
  const started = await daemon.start();
  if (!started.ok) {
    log.fatal({ code: started.error.code }, started.error.message);
    process.stderr.write(`petreld: ${started.error.message}\n`);
    return started.error.code === 'E_PREFLIGHT'
      ? EXIT.PREFLIGHT
      : started.error.code === 'E_CANARY'
        ? EXIT.CANARY
        : EXIT.FAILED;
  }
  return new Promise<number>((resolve) => {
    let stopping = false;
    // SIGUSR2 stops every unikernel too; SIGTERM and SIGINT as the configuration says
    // (stopGuestsOnExit), by default leaving them to the holder for the next start (Petrel (k)).
    const shutdown = (signal: string) => {
      if (stopping) return;
      stopping = true;
      const stopGuests = signal === 'SIGUSR2' || config.stopGuestsOnExit;
      log.info(
        { signal, stopGuests },
        stopGuests
          ? 'stopping: every unikernel is stopped; the state file keeps them for the next start'
          : 'stopping: unikernels run on under the holder; the next start adopts them',
      );
      daemon.stop({ stopGuests }).then(
        () => resolve(EXIT.OK),
        (e: unknown) => {
          log.error({ reason: String(e) }, 'shutdown failed');
          resolve(EXIT.FAILED);
        },
      );
    };
    signalled = shutdown;
    if (early !== null) shutdown(early);
  });
}

/** `petreld export-state FILE`: exit 0 once FILE is written, 1 with the reason otherwise. */
async function exportStateFile(config: PetrelConfig, file: string): Promise<number> {
  const { exportState } = await import('../daemon/export.js');
  const log = createLogger({ level: config.logLevel, format: config.logFormat, fd: 2 });
  const done = await exportState(config, path.resolve(file), log);
  if (!done.ok) {
    process.stderr.write(`petreld: ${done.error.message}\n`);
    return EXIT.FAILED;
  }
  process.stdout.write(
    `exported ${done.value.unikernels} unikernels (${done.value.bytes} bytes) to ${file}\n`,
  );
  return EXIT.OK;
}

/** `petreld tls-endpoint`: runs until SIGTERM or SIGINT; exit 0 after a clean stop. */
async function tlsEndpoint(args: readonly string[]): Promise<number> {
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(TLS_ENDPOINT_USAGE);
    return EXIT.OK;
  }
  const stop = new AbortController();
  process.once('SIGTERM', () => stop.abort());
  process.once('SIGINT', () => stop.abort());
  return runSeparateTlsEndpoint(args, {
    logger: createLogger({ level: 'info', format: 'auto' }),
    signal: stop.signal,
    stderr: (text) => process.stderr.write(text),
  });
}

process.exitCode = await main(process.argv.slice(2));
