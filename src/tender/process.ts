// One tender process under the holder (src/host/holder.ts): spawned with its console on the
// unikernel's FIFO, or taken over from an earlier petreld; recorded in a PID record, stopped
// with SIGTERM then SIGKILL, and a shutdown promise that remembers who signalled.

import { defaultCommandEnv } from '../host/command.js';
import { ioError } from '../host/files.js';
import type { HeldChild, HeldChildInfo, HeldExit, Holder } from '../host/holder.js';
import {
  type PidRecord,
  type PidRecordError,
  processGone,
  processStartTime,
  readPidRecordFile,
  removePidRecord,
  stopRecordedProcess,
  writePidRecord,
} from '../host/pidrecord.js';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import type { Name } from '../resources/name.js';

/** How a tender ended. `sentSignal` is the last signal Petrel sent it, so that hvt's exit 1
 * after our SIGTERM (solo5.md §1.9) is not mistaken for a failure. `holderLost` when the holder
 * died, which took the tender with it: not the guest's doing. */
export interface TenderExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly sentSignal: 'SIGTERM' | 'SIGKILL' | null;
  readonly holderLost?: boolean;
}

/** Where the tender's stdin, stdout and stderr go: a console FIFO the holder reads (keeping the
 * last `bufferBytes` while no petreld is attached), or a file opened for appending (tests give
 * /dev/null). */
export type ConsoleTarget =
  | { readonly fifo: string; readonly bufferBytes?: number }
  | { readonly file: string };

export interface SpawnOptions {
  readonly holder: Holder;
  /** The full argument vector; argv[0] is the program (`taskset`, from argv.ts). */
  readonly argv: readonly string[];
  readonly console: ConsoleTarget;
  /** Write `<run-dir>/tenders/<name>` once the process runs; removed again when it exits. */
  readonly record?: { readonly runDir: string; readonly name: Name };
  /** Environment of the tender. Default: only `PATH`. */
  readonly env?: NodeJS.ProcessEnv;
  /** Kept by the holder for a later petreld: which unikernel, and what it needs to adopt it. */
  readonly tag?: string;
  readonly meta?: string;
}

export type SpawnError = PidRecordError | PetrelError<'E_TENDER_CONSOLE' | 'E_TENDER_SPAWN'>;

export interface TenderProcess {
  readonly pid: number;
  /** Field 22 of /proc/<pid>/stat; null if the process was gone before it could be read. */
  readonly startTime: string | null;
  /** Wall clock at spawn (what unikernel info reports as started). */
  readonly startedAt: Date;
  readonly record: PidRecord | null;
  /** The console bytes the holder reads, when the console is a FIFO. */
  readonly console: HeldChild | null;
  /** Resolves once the process exited and its PID record is removed. Never rejects. */
  readonly shutdown: Promise<TenderExit>;
  readonly exited: boolean;
  /** SIGTERM, then SIGKILL after `graceMs` unless it exited; resolves with the exit. */
  stop(graceMs: number): Promise<TenderExit>;
  /** Tells the holder the exit was dealt with, so a later petreld does not see it again. */
  forget(): void;
}

/** The error for a console the holder could not open, in the terms of the host layer. */
function consoleError(path: string, errno: string): SpawnError {
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

/** How long a tender whose holder died may take to die of its parent-death signal. */
const ORPHAN_GRACE_MS = 2_000;

/**
 * A held child as a tender: exit, shutdown (record dropped), stop with escalation. When the
 * holder is lost the exit waits until the process is really gone (its parent-death signal, or
 * SIGKILL from here), so nobody starts the unikernel again while it still runs. One per running
 * unikernel, so its state is fields and its steps are methods: an object of closures and
 * getters cost a function and a context per step, and V8 kept it as a dictionary.
 */
class HeldTender implements TenderProcess {
  readonly pid: number;
  readonly console: HeldChild | null;
  readonly shutdown: Promise<TenderExit>;
  /** Set by spawnTender once written, before any exit can be handled. */
  record: PidRecord | null;
  readonly #child: HeldChild;
  #sentSignal: TenderExit['sentSignal'] = null;
  #exited = false;
  #stopping: Promise<TenderExit> | null = null;

  constructor(
    child: HeldChild,
    readonly startTime: string | null,
    readonly startedAt: Date,
    console: boolean,
    record: PidRecord | null,
  ) {
    this.pid = child.pid;
    this.console = console ? child : null;
    this.record = record;
    this.#child = child;
    this.shutdown = child.exit.then((status) =>
      status.holderLost && startTime !== null
        ? stopRecordedProcess({ pid: child.pid, startTime }, { term: false, graceMs: ORPHAN_GRACE_MS }).then(
            () => this.#ended(status),
          )
        : this.#ended(status),
    );
  }

  get exited(): boolean {
    return this.#exited;
  }

  stop(graceMs: number): Promise<TenderExit> {
    this.#stopping ??= this.#stop(graceMs);
    return this.#stopping;
  }

  forget(): void {
    this.#child.forget();
  }

  /** The process is gone: its record is dropped (while it still names this process). */
  #ended(status: HeldExit): TenderExit {
    this.#exited = true;
    if (this.record !== null) dropRecord(this.record);
    return {
      code: status.code,
      signal: status.signal,
      sentSignal: this.#sentSignal,
      ...(status.holderLost ? { holderLost: true } : {}),
    };
  }

  #send(signal: 'SIGTERM' | 'SIGKILL'): void {
    if (this.#exited) return;
    this.#sentSignal = signal;
    this.#child.kill(signal);
  }

  async #stop(graceMs: number): Promise<TenderExit> {
    this.#send('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const finished = await Promise.race([
      this.shutdown.then(() => true),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(resolve, graceMs, false);
      }),
    ]);
    clearTimeout(timer);
    if (!finished) this.#send('SIGKILL');
    return this.shutdown;
  }
}

/**
 * Starts a tender under the holder. On success the process runs (or has already ended: see
 * `shutdown`) and, when asked, its PID record exists. If the record cannot be written the
 * tender is killed and the error returned, so no unrecorded tender is left behind.
 */
export async function spawnTender(options: SpawnOptions): Promise<Result<TenderProcess, SpawnError>> {
  const program = options.argv[0];
  if (program === undefined) return err('E_TENDER_SPAWN', 'empty argument vector');
  const target = options.console;
  const spawned = await options.holder.spawn({
    argv: options.argv,
    env: options.env ?? defaultCommandEnv(),
    console:
      'fifo' in target
        ? {
            kind: 'fifo',
            path: target.fifo,
            ...(target.bufferBytes === undefined ? {} : { bufferBytes: target.bufferBytes }),
          }
        : { kind: 'file', path: target.file },
    tag: options.tag ?? '',
    ...(options.meta === undefined ? {} : { meta: options.meta }),
  });
  const startedAt = new Date();
  if (!spawned.ok) {
    const failure = spawned.error;
    const path = 'fifo' in target ? target.fifo : target.file;
    if ('stage' in failure && failure.stage === 'console')
      return { ok: false, error: consoleError(path, failure.errno) };
    const reason = 'stage' in failure ? failure.errno : failure.message;
    return err('E_TENDER_SPAWN', `could not start ${program}: ${reason}`, { program });
  }
  const child = spawned.value;
  const startTime = processStartTime(child.pid);
  const tender = new HeldTender(
    child,
    startTime.ok ? startTime.value : null,
    startedAt,
    'fifo' in target,
    null,
  );
  // The record is written synchronously below, before any exit can be handled, so shutdown
  // (which drops it) always sees it: once shutdown resolves no record of this process is left.
  if (options.record !== undefined && !startTime.ok && !child.exited && processGone(child.pid)) {
    // It exited, and the holder reaped it, before its start time could be read (a jail that
    // failed at once): it needs no record, and its exit, on its way from the holder, ends it as
    // any exit does, with what it said on its console.
    await tender.shutdown;
    return ok(tender);
  }
  if (options.record !== undefined && !startTime.ok && !child.exited) {
    child.kill('SIGKILL');
    await tender.shutdown;
    child.forget();
    return startTime;
  }
  if (options.record !== undefined && startTime.ok) {
    const written = writePidRecord(options.record.runDir, options.record.name, child.pid, startTime.value);
    if (!written.ok) {
      child.kill('SIGKILL');
      await tender.shutdown;
      child.forget();
      return written;
    }
    tender.record = written.value.value;
  }
  return ok(tender);
}

/**
 * Takes over a tender an earlier petreld started (the holder still has it, running or exited):
 * its console from the oldest byte the holder kept, its exit, its record. Null when the holder
 * no longer has it.
 */
export async function adoptTender(
  holder: Holder,
  info: HeldChildInfo,
  record: PidRecord | null,
): Promise<{ tender: TenderProcess; console: { first: number; acked: number } } | null> {
  const watched = await holder.watch(info.pid);
  if (watched === null) return null;
  const tender = new HeldTender(watched.child, record?.startTime ?? null, info.startedAt, true, record);
  return { tender, console: watched.console };
}
