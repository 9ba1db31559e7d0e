// One tender process: spawned with its console on the unikernel's FIFO, recorded in a PID
// record, stopped with SIGTERM then SIGKILL, and a shutdown promise that remembers who signalled.

import { setTimeout as sleep } from 'node:timers/promises';
import { defaultCommandEnv } from '../host/command.js';
import { ioError } from '../host/files.js';
import {
  type PidRecord,
  type PidRecordError,
  processStartTime,
  readPidRecordFile,
  removePidRecord,
  writePidRecord,
} from '../host/pidrecord.js';
import { type SpawnConsole, spawnChild } from '../host/spawner.js';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import type { Name } from '../resources/name.js';

/** How a tender ended. `sentSignal` is the last signal Petrel sent it, so that hvt's exit 1
 * after our SIGTERM (solo5.md §1.9) is not mistaken for a failure. */
export interface TenderExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly sentSignal: 'SIGTERM' | 'SIGKILL' | null;
}

/** Where the tender's stdin, stdout and stderr go: a console FIFO (a reader must have it open)
 * or a file opened for appending (tests give /dev/null). */
export type ConsoleTarget = { readonly fifo: string } | { readonly file: string };

export interface SpawnOptions {
  /** The full argument vector; argv[0] is the program (`taskset`, from argv.ts). */
  readonly argv: readonly string[];
  readonly console: ConsoleTarget;
  /** Write `<run-dir>/tenders/<name>` once the process runs; removed again when it exits. */
  readonly record?: { readonly runDir: string; readonly name: Name };
  /** Environment of the tender. Default: only `PATH`. */
  readonly env?: NodeJS.ProcessEnv;
}

export type SpawnError = PidRecordError | PetrelError<'E_TENDER_CONSOLE' | 'E_TENDER_SPAWN'>;

export interface TenderProcess {
  readonly pid: number;
  /** Field 22 of /proc/<pid>/stat; null if the process was gone before it could be read. */
  readonly startTime: string | null;
  /** Wall clock at spawn (what unikernel info reports as started). */
  readonly startedAt: Date;
  readonly record: PidRecord | null;
  /** Resolves once the process exited and its PID record is removed. Never rejects. */
  readonly shutdown: Promise<TenderExit>;
  readonly exited: boolean;
  /** SIGTERM, then SIGKILL after `graceMs` unless it exited; resolves with the exit. */
  stop(graceMs: number): Promise<TenderExit>;
}

/** The error for a console the spawner could not open, in the terms of the host layer. */
function consoleError(path: string, errno: string): SpawnError {
  if (errno === 'ENXIO') {
    return { code: 'E_TENDER_CONSOLE', message: `nobody reads the console fifo ${path}`, details: { path } };
  }
  if (errno === 'ENOTSUP') {
    return { code: 'E_TENDER_CONSOLE', message: `console ${path} is not a fifo`, details: { path } };
  }
  return ioError('open', path, Object.assign(new Error(errno), { code: errno }));
}

/** Deletes the record only while it still names this process (a successor may own the name). */
function dropRecord(record: PidRecord): void {
  const current = readPidRecordFile(record.path);
  if (current.ok && current.value.pid === record.pid && current.value.startTime === record.startTime) {
    removePidRecord(record.path);
  }
}

/**
 * Starts a tender. On success the process runs (or has already ended: see `shutdown`) and,
 * when asked, its PID record exists. If the record cannot be written the tender is killed and
 * the error returned, so no unrecorded tender is left behind.
 */
export async function spawnTender(options: SpawnOptions): Promise<Result<TenderProcess, SpawnError>> {
  const program = options.argv[0];
  if (program === undefined) return err('E_TENDER_SPAWN', 'empty argument vector');
  const console: SpawnConsole =
    'fifo' in options.console
      ? { kind: 'fifo', path: options.console.fifo }
      : { kind: 'file', path: options.console.file };
  const spawned = await spawnChild({ argv: options.argv, env: options.env ?? defaultCommandEnv(), console });
  const startedAt = new Date();
  if (!spawned.ok) {
    const failure = spawned.error;
    if ('stage' in failure && failure.stage === 'console')
      return { ok: false, error: consoleError(console.path, failure.errno) };
    const reason = 'stage' in failure ? failure.errno : failure.message;
    return err('E_TENDER_SPAWN', `could not start ${program}: ${reason}`, { program });
  }
  const child = spawned.value;

  let sentSignal: TenderExit['sentSignal'] = null;
  let exited = false;
  let record: PidRecord | null = null;
  const exit = new Promise<TenderExit>((resolve) => {
    const done = (code: number | null, signal: NodeJS.Signals | null): void => {
      exited = true;
      resolve({ code, signal, sentSignal });
    };
    void child.exit.then(({ code, signal }) => done(code, signal));
  });
  // The record is written synchronously below, before any exit can be handled, so shutdown
  // (which drops it) always sees it: once shutdown resolves no record of this process is left.
  const shutdown = exit.then((status) => {
    if (record !== null) dropRecord(record);
    return status;
  });

  const startTime = processStartTime(child.pid);
  if (options.record !== undefined && !startTime.ok && !exited) {
    child.kill('SIGKILL');
    await shutdown;
    return startTime;
  }
  if (options.record !== undefined && startTime.ok) {
    const written = writePidRecord(options.record.runDir, options.record.name, child.pid, startTime.value);
    if (!written.ok) {
      child.kill('SIGKILL');
      await shutdown;
      return written;
    }
    record = written.value.value;
  }

  let stopping: Promise<TenderExit> | null = null;
  const send = (signal: 'SIGTERM' | 'SIGKILL'): void => {
    if (exited) return;
    sentSignal = signal;
    child.kill(signal);
  };
  const stop = (graceMs: number): Promise<TenderExit> => {
    stopping ??= (async () => {
      send('SIGTERM');
      const timer = new AbortController();
      const finished = await Promise.race([
        exit.then(() => true),
        sleep(graceMs, false, { signal: timer.signal }).catch(() => false),
      ]);
      timer.abort();
      if (!finished) send('SIGKILL');
      return shutdown;
    })();
    return stopping;
  };

  return ok({
    pid: child.pid,
    startTime: startTime.ok ? startTime.value : null,
    startedAt,
    get record() {
      return record;
    },
    shutdown,
    get exited() {
      return exited;
    },
    stop,
  });
}
