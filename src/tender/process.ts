// One tender process: spawned with its console on the unikernel's FIFO, recorded in a PID
// record, stopped with SIGTERM then SIGKILL, and a shutdown promise that remembers who signalled.

import { type ChildProcess, spawn } from 'node:child_process';
import { constants } from 'node:fs';
import { type FileHandle, lstat, open } from 'node:fs/promises';
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
 * or a descriptor the caller owns and keeps. */
export type ConsoleTarget = { readonly fifo: string } | { readonly fd: number };

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

/**
 * Opens the FIFO's write end for the tender. A non-blocking probe first: without a reader it
 * fails at once (ENXIO) instead of blocking a thread-pool thread forever. The descriptor given
 * to the tender is then opened blocking, because the tender must never see EAGAIN (solo5.md §1.12).
 */
async function openConsoleFifo(fifo: string): Promise<Result<FileHandle, SpawnError>> {
  try {
    if (!(await lstat(fifo)).isFIFO()) {
      return err('E_TENDER_CONSOLE', `console ${fifo} is not a fifo`, { path: fifo });
    }
  } catch (cause) {
    return { ok: false, error: ioError('lstat', fifo, cause) };
  }
  const flags = constants.O_WRONLY | constants.O_APPEND | constants.O_NOFOLLOW;
  let probe: FileHandle;
  try {
    probe = await open(fifo, flags | constants.O_NONBLOCK);
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'ENXIO') {
      return err('E_TENDER_CONSOLE', `nobody reads the console fifo ${fifo}`, { path: fifo });
    }
    return { ok: false, error: ioError('open', fifo, cause) };
  }
  try {
    return ok(await open(fifo, flags));
  } catch (cause) {
    return { ok: false, error: ioError('open', fifo, cause) };
  } finally {
    await probe.close();
  }
}

function started(child: ChildProcess): Promise<Result<number, SpawnError>> {
  return new Promise((resolve) => {
    child.once('spawn', () => resolve(ok(child.pid ?? -1)));
    child.once('error', (cause) =>
      resolve(
        err('E_TENDER_SPAWN', `could not start ${child.spawnfile}: ${cause.message}`, {
          program: child.spawnfile,
        }),
      ),
    );
  });
}

/** Deletes the record only while it still names this process (a successor may own the name). */
async function dropRecord(record: PidRecord): Promise<void> {
  const current = await readPidRecordFile(record.path);
  if (current.ok && current.value.pid === record.pid && current.value.startTime === record.startTime) {
    await removePidRecord(record.path);
  }
}

/**
 * Starts a tender. On success the process runs (or has already ended: see `shutdown`) and,
 * when asked, its PID record exists. If the record cannot be written the tender is killed and
 * the error returned, so no unrecorded tender is left behind.
 */
export async function spawnTender(options: SpawnOptions): Promise<Result<TenderProcess, SpawnError>> {
  const [program, ...args] = options.argv;
  if (program === undefined) return err('E_TENDER_SPAWN', 'empty argument vector');
  let fifoHandle: FileHandle | null = null;
  let fd: number;
  if ('fifo' in options.console) {
    const opened = await openConsoleFifo(options.console.fifo);
    if (!opened.ok) return opened;
    fifoHandle = opened.value;
    fd = fifoHandle.fd;
  } else {
    fd = options.console.fd;
  }
  let child: ChildProcess;
  try {
    child = spawn(program, args, {
      stdio: [fd, fd, fd],
      env: options.env ?? defaultCommandEnv(),
      windowsHide: true,
    });
  } catch (cause) {
    await fifoHandle?.close();
    return err('E_TENDER_SPAWN', `could not start ${program}: ${(cause as Error).message}`, { program });
  }
  const startedAt = new Date();
  const pid = await started(child);
  // The child has its own copies now (or failed to start): ours must not keep the FIFO open.
  await fifoHandle?.close();
  if (!pid.ok) return pid;

  let sentSignal: TenderExit['sentSignal'] = null;
  let exited = false;
  let record: PidRecord | null = null;
  const exit = new Promise<TenderExit>((resolve) => {
    const done = (code: number | null, signal: NodeJS.Signals | null): void => {
      exited = true;
      resolve({ code, signal, sentSignal });
    };
    if (child.exitCode !== null || child.signalCode !== null) done(child.exitCode, child.signalCode);
    else child.once('exit', done);
  });
  // The record step below may still be running when the tender exits; shutdown waits for it,
  // so that once shutdown resolves no record of this process is left.
  let recordSettled: () => void = () => undefined;
  const recordStep = new Promise<void>((resolve) => {
    recordSettled = resolve;
  });
  const shutdown = Promise.all([exit, recordStep]).then(async ([status]) => {
    if (record !== null) await dropRecord(record).catch(() => undefined);
    return status;
  });

  const startTime = await processStartTime(pid.value);
  if (options.record !== undefined && !startTime.ok && !exited) {
    recordSettled();
    child.kill('SIGKILL');
    await shutdown;
    return startTime;
  }
  if (options.record !== undefined && startTime.ok) {
    const written = await writePidRecord(
      options.record.runDir,
      options.record.name,
      pid.value,
      startTime.value,
    );
    if (!written.ok) {
      recordSettled();
      child.kill('SIGKILL');
      await shutdown;
      return written;
    }
    record = written.value.value;
  }
  recordSettled();

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
    pid: pid.value,
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
